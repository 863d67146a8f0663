package allocatorconfig

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// File is targetallocator.yaml: the one type the operator renders (Marshal)
// and the allocator reads (Parse). Allocator holds the allocator's own keys,
// Discovery the discovery keys; both sit at the top level of the file.
type File struct {
	Allocator `yaml:",inline"`
	// Discovery is read by ParseConfig (yaml.v2 does not call the
	// UnmarshalYAML of inline fields, so it is not decoded in place).
	Discovery Config `yaml:"-"`
}

// FileKeys are the top-level keys of the file, the allocator's own first.
func FileKeys() []string {
	return append(YAMLKeys(reflect.TypeFor[Allocator]()), Keys()...)
}

// Parse reads a whole allocator config file strictly: an unknown key at the
// top level, in prometheus_cr or in an entry of collectors is an error
// naming it, and so is a value of the wrong type, named by its key. The
// discovery keys get their defaults and are validated (ParseConfig); the
// allocator's own keys are returned as written, for the allocator to
// default and check against its runtime (strategies, the weights learner).
func Parse(b []byte) (*File, error) {
	var top map[string]any
	if err := yaml.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("%w: parse: %w", ErrConfig, err)
	}
	known := FileKeys()
	var unknown []string
	for k := range top {
		if !slices.Contains(known, k) {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("%w: unknown key %s (known: %s)", ErrConfig, strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	// The allocator's keys one at a time, so that an error names its key.
	var f File
	for _, k := range YAMLKeys(reflect.TypeFor[Allocator]()) {
		v, ok := top[k]
		if !ok {
			continue
		}
		one, err := yaml.Marshal(map[string]any{k: v})
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrConfig, k, err)
		}
		if err := yaml.UnmarshalStrict(one, &f.Allocator); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrConfig, k, err)
		}
	}
	d, err := ParseConfig(b)
	if err != nil {
		return nil, err
	}
	f.Discovery = *d
	return &f, nil
}

// Marshal renders the file with its keys sorted, as the OpenTelemetry
// Operator writes targetallocator.yaml. Zero values are left out, except
// the collector selector, written as {} when set and empty.
func (f *File) Marshal() ([]byte, error) {
	out := fileYAML{Allocator: f.Allocator, FilterStrategy: f.Discovery.FilterStrategy, PromConfig: f.Discovery.PromConfig}
	c, err := f.Discovery.Collector.written()
	if err != nil {
		return nil, err
	}
	out.collectorYAML = c
	if !reflect.ValueOf(f.Discovery.PrometheusCR).IsZero() {
		out.PrometheusCR = &f.Discovery.PrometheusCR
	}
	b, err := yaml.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("marshal allocator config: %w", err)
	}
	// Through JSON, for sorted keys.
	j, err := sigsyaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("marshal allocator config: %w", err)
	}
	return sigsyaml.JSONToYAML(j)
}

// fileYAML is File as written.
type fileYAML struct {
	Allocator      `yaml:",inline"`
	collectorYAML  `yaml:",inline"`
	PromConfig     *PromConfig         `yaml:"config,omitempty"`
	FilterStrategy string              `yaml:"filter_strategy,omitempty"`
	PrometheusCR   *PrometheusCRConfig `yaml:"prometheus_cr,omitempty"`
}

// written is the collector keys as the file holds them.
func (c CollectorConfig) written() (collectorYAML, error) {
	sel, err := selectorValue(c.CollectorSelector)
	return collectorYAML{collectorPlain: collectorPlain(c), Selector: sel}, err
}

// MarshalYAML implements yaml.v2's Marshaler: selectors and scrape classes
// in Kubernetes' JSON form, as UnmarshalYAML reads them.
func (c PrometheusCRConfig) MarshalYAML() (any, error) {
	out := prometheusCRYAML{prometheusCRPlain: prometheusCRPlain(c)}
	for _, s := range []struct {
		in  *metav1.LabelSelector
		out *any
	}{
		{c.ServiceMonitorSelector, &out.ServiceMonitorSelector},
		{c.ServiceMonitorNamespaceSelector, &out.ServiceMonitorNamespaceSelector},
		{c.PodMonitorSelector, &out.PodMonitorSelector},
		{c.PodMonitorNamespaceSelector, &out.PodMonitorNamespaceSelector},
		{c.ProbeSelector, &out.ProbeSelector},
		{c.ProbeNamespaceSelector, &out.ProbeNamespaceSelector},
		{c.ScrapeConfigSelector, &out.ScrapeConfigSelector},
		{c.ScrapeConfigNamespaceSelector, &out.ScrapeConfigNamespaceSelector},
	} {
		v, err := selectorValue(s.in)
		if err != nil {
			return nil, err
		}
		*s.out = v
	}
	if c.ScrapeClasses != nil {
		v, err := jsonValue(c.ScrapeClasses)
		if err != nil {
			return nil, fmt.Errorf("scrape_classes: %w", err)
		}
		out.ScrapeClasses = v
	}
	return out, nil
}

// selectorValue is a selector as the file holds it: nil stays nil (left
// out), an empty one is {}.
func selectorValue(s *metav1.LabelSelector) (any, error) {
	if s == nil {
		return nil, nil
	}
	return jsonValue(s)
}

// jsonValue is v's JSON form as plain maps and slices.
func jsonValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}
