package allocatorconfig

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v2"
)

// written are the types whose YAML form is another type's: the keys of the
// file are read from the form as written.
var written = map[reflect.Type]reflect.Type{
	reflect.TypeFor[CollectorConfig]():    reflect.TypeFor[collectorYAML](),
	reflect.TypeFor[PrometheusCRConfig](): reflect.TypeFor[prometheusCRYAML](),
}

// Keys are the top-level keys of the allocator config file that Config
// reads, from its field tags.
func Keys() []string { return YAMLKeys(reflect.TypeFor[Config]()) }

// YAMLKeys returns the YAML keys of the exported fields of struct type t,
// in field order, inline fields' keys in place; fields tagged "-" have none.
func YAMLKeys(t reflect.Type) []string {
	if w, ok := written[t]; ok {
		t = w
	}
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "-":
		case slices.Contains(strings.Split(opts, ","), "inline"):
			keys = append(keys, YAMLKeys(f.Type)...)
		case !f.IsExported():
		case name == "":
			keys = append(keys, strings.ToLower(f.Name))
		default:
			keys = append(keys, name)
		}
	}
	return keys
}

// checkKeys reports the first key of the mapping being unmarshaled that the
// YAML form of t does not have, naming it under path.
func checkKeys(unmarshal func(any) error, path string, t reflect.Type) error {
	var m yaml.MapSlice
	if err := unmarshal(&m); err != nil {
		return fmt.Errorf("%w: %s: want a mapping: %w", ErrConfig, path, err)
	}
	known := YAMLKeys(t)
	var unknown []string
	for _, it := range m {
		if k := fmt.Sprint(it.Key); !slices.Contains(known, k) {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("%w: %s: unknown key %s (known: %s)", ErrConfig, path, strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return nil
}
