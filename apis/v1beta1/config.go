package v1beta1

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// AnyConfig is a free-form JSON object, such as one component's configuration
// in the collector config. Its schema preserves unknown fields.
//
// +kubebuilder:object:generate=false
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
type AnyConfig struct {
	// Object is the decoded JSON object; nil is JSON null or absent.
	Object map[string]any `json:"-"`
}

// MarshalJSON encodes the object; a nil object encodes as {}.
func (c AnyConfig) MarshalJSON() ([]byte, error) {
	if c.Object == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(c.Object)
}

// UnmarshalJSON decodes a JSON object, keeping numbers as json.Number so that
// integers survive a round trip unchanged.
func (c *AnyConfig) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		c.Object = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("decode config object: %w", err)
	}
	c.Object = m
	return nil
}

// DeepCopyInto copies the receiver into out.
func (c *AnyConfig) DeepCopyInto(out *AnyConfig) {
	if c.Object == nil {
		out.Object = nil
		return
	}
	out.Object = copyJSONValue(c.Object).(map[string]any)
}

// DeepCopy returns a deep copy of the receiver.
func (c *AnyConfig) DeepCopy() *AnyConfig {
	if c == nil {
		return nil
	}
	out := new(AnyConfig)
	c.DeepCopyInto(out)
	return out
}

// copyJSONValue copies the values encoding/json and sigs.k8s.io/yaml decode
// into; other values are shared, which is safe for the immutable scalars.
func copyJSONValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = copyJSONValue(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyJSONValue(e)
		}
		return out
	default:
		return v
	}
}

// Config is the collector configuration, with the top-level sections of the
// OpenTelemetry Collector's config file. Component configurations are free
// form and keep every field.
type Config struct {
	// receivers configures the receivers, keyed by component id (type[/name]).
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	Receivers AnyConfig `json:"receivers"`
	// exporters configures the exporters, keyed by component id.
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	Exporters AnyConfig `json:"exporters"`
	// processors configures the processors, keyed by component id.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Processors *AnyConfig `json:"processors,omitempty"`
	// connectors configures the connectors, keyed by component id.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Connectors *AnyConfig `json:"connectors,omitempty"`
	// extensions configures the extensions, keyed by component id.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Extensions *AnyConfig `json:"extensions,omitempty"`
	// service wires the components into pipelines.
	// +required
	Service Service `json:"service"`
}

// Service is the service section of the collector configuration.
type Service struct {
	// extensions lists the extensions to start.
	// +optional
	// +listType=atomic
	Extensions []string `json:"extensions,omitempty"`
	// telemetry configures the collector's own telemetry.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Telemetry *AnyConfig `json:"telemetry,omitempty"`
	// pipelines are the collector's pipelines, keyed by id (signal[/name]).
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	Pipelines map[string]*Pipeline `json:"pipelines"`
}

// Pipeline is one pipeline of the collector configuration.
type Pipeline struct {
	// receivers lists the pipeline's receivers.
	// +optional
	// +listType=atomic
	Receivers []string `json:"receivers,omitempty"`
	// processors lists the pipeline's processors, in order.
	// +optional
	// +listType=atomic
	Processors []string `json:"processors,omitempty"`
	// exporters lists the pipeline's exporters.
	// +optional
	// +listType=atomic
	Exporters []string `json:"exporters,omitempty"`
}
