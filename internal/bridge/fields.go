package bridge

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/shardwise/shardwise/apis/v1beta1"
)

// DefaultRemoteConfigFields are the fields of a collector's spec an OpAMP
// server may set when the bridge's configuration names none: its pipeline,
// its size and its resources. Everything that decides what the collector's
// pods may do on their node (image, volumes, security context, host
// network, service account) stays with whoever may edit the collector.
var DefaultRemoteConfigFields = []string{"config", "replicas", "resources"}

// Redacted stands for a value the bridge does not report to the OpAMP
// server. A remote configuration that sends it back keeps the value the
// collector has.
const Redacted = "<redacted>"

// specFieldNames are the JSON names of the collector spec's fields.
var specFieldNames = func() []string {
	var out []string
	t := reflect.TypeFor[v1beta1.OpenTelemetryCollectorSpec]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}()

// checkRemoteConfigFields refuses names that are no field of a collector's
// spec.
func checkRemoteConfigFields(names []string) error {
	var unknown []string
	for _, n := range names {
		if !slices.Contains(specFieldNames, n) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("config: remoteConfigFields: %s: not fields of an OpenTelemetryCollector's spec", strings.Join(unknown, ", "))
	}
	return nil
}

// remoteFields are the fields the server may set.
func (c Config) remoteFields() []string {
	if len(c.RemoteConfigFields) == 0 {
		return DefaultRemoteConfigFields
	}
	return c.RemoteConfigFields
}

// specMap is a spec as its top-level JSON fields (those set: the spec's
// fields are omitempty).
func specMap(spec *v1beta1.OpenTelemetryCollectorSpec) (map[string]json.RawMessage, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// remoteSpec is the spec a remote configuration asks for, given the
// collector's current spec (nil for a collector to create), the spec fields
// the remote entry writes (as it wrote them) and the fields the server may
// set. A field it may set is taken from the remote side (absent there:
// unset), with redacted values put back from current; any other field the
// entry writes must be as the collector has it, else the whole entry is
// refused; fields the entry does not write keep their current values.
func remoteSpec(current *v1beta1.OpenTelemetryCollectorSpec, want map[string]json.RawMessage, allowed []string) (v1beta1.OpenTelemetryCollectorSpec, error) {
	have := map[string]json.RawMessage{}
	if current != nil {
		var err error
		if have, err = specMap(current); err != nil {
			return v1beta1.OpenTelemetryCollectorSpec{}, fmt.Errorf("encode current spec: %w", err)
		}
	}
	var refused []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if !slices.Contains(allowed, k) && !sameJSON(want[k], have[k]) {
			refused = append(refused, k)
		}
	}
	if len(refused) > 0 {
		return v1beta1.OpenTelemetryCollectorSpec{}, fmt.Errorf("the OpAMP server may not set spec.%s (the OpAMPBridge's remoteConfigFields allow %s)",
			strings.Join(refused, ", spec."), strings.Join(allowed, ", "))
	}
	merged := maps.Clone(have)
	for _, k := range allowed {
		v, ok := want[k]
		if !ok {
			delete(merged, k)
			continue
		}
		if old, ok := have[k]; ok {
			var err error
			if v, err = unredact(v, old); err != nil {
				return v1beta1.OpenTelemetryCollectorSpec{}, fmt.Errorf("spec.%s: %w", k, err)
			}
		}
		merged[k] = v
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return v1beta1.OpenTelemetryCollectorSpec{}, fmt.Errorf("encode spec: %w", err)
	}
	var out v1beta1.OpenTelemetryCollectorSpec
	if err := json.Unmarshal(b, &out); err != nil {
		return v1beta1.OpenTelemetryCollectorSpec{}, fmt.Errorf("decode spec: %w", err)
	}
	return out, nil
}

// sameJSON says whether two JSON documents hold the same value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// unredact puts back, wherever want holds Redacted, the value have holds
// at the same place.
func unredact(want, have json.RawMessage) (json.RawMessage, error) {
	var w, h any
	if err := json.Unmarshal(want, &w); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(have, &h); err != nil {
		return nil, err
	}
	return json.Marshal(restore(w, h))
}

func restore(want, have any) any {
	switch w := want.(type) {
	case string:
		if w == Redacted && have != nil {
			return have
		}
	case map[string]any:
		h, _ := have.(map[string]any)
		for k, v := range w {
			w[k] = restore(v, h[k])
		}
	case []any:
		h, _ := have.([]any)
		for i, v := range w {
			var hv any
			if i < len(h) {
				hv = h[i]
			}
			w[i] = restore(v, hv)
		}
	}
	return want
}

// secretKey matches the configuration keys whose values are credentials.
var secretKey = regexp.MustCompile(`(?i)(password|passwd|secret|token|api[_-]?key|authorization|bearer|credential|private[_-]?key|key_file|cert_file)`)

// reportedSpec is what the bridge reports of a collector's spec as its
// effective configuration: the fields the server may set, with the values
// of credential keys of the configuration, and environment values,
// replaced by Redacted.
func reportedSpec(spec *v1beta1.OpenTelemetryCollectorSpec, allowed []string) (map[string]any, error) {
	m, err := specMap(spec)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, k := range allowed {
		raw, ok := m[k]
		if !ok {
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		switch k {
		case "env":
			v = redactEnv(v)
		default:
			v = redact(v)
		}
		out[k] = v
	}
	return out, nil
}

// redact replaces the values of credential keys, and of headers, in a
// configuration tree.
func redact(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if secretKey.MatchString(k) || strings.EqualFold(k, "headers") {
				t[k] = redactAll(e)
				continue
			}
			t[k] = redact(e)
		}
	case []any:
		for i, e := range t {
			t[i] = redact(e)
		}
	}
	return v
}

// redactAll replaces every scalar below v.
func redactAll(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = redactAll(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = redactAll(e)
		}
		return t
	default:
		return Redacted
	}
}

// redactEnv replaces the literal values of environment variables; a
// valueFrom reference names no secret and stays.
func redactEnv(v any) any {
	list, _ := v.([]any)
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			if _, ok := m["value"]; ok {
				m["value"] = Redacted
			}
		}
	}
	return v
}
