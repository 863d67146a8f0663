package crdslim

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// Slimmer removes the descriptions of foreign types from CRDs. Its zero
// value is not usable; build one with New.
type Slimmer struct {
	// types are the Go types of the CRDs' kinds, by group, version and kind.
	types map[schema.GroupVersionKind]reflect.Type
	// own is the import path under which descriptions are kept.
	own string
}

// New returns a Slimmer that finds the Go type of each CRD version in types
// (a runtime.Scheme's AllKnownTypes) and keeps the descriptions of Go code
// declared in the package own or below it, an import path such as
// "github.com/shardwise/shardwise/apis".
func New(types map[schema.GroupVersionKind]reflect.Type, own string) *Slimmer {
	return &Slimmer{types: types, own: strings.TrimSuffix(own, "/")}
}

// Slim returns the CRD in the YAML document crd, with the descriptions of
// foreign types removed from the schema of each version, as one YAML
// document starting with "---" (the shape controller-gen writes).
func (s *Slimmer) Slim(crd []byte) ([]byte, error) {
	var obj map[string]any
	if err := yaml.Unmarshal(crd, &obj, useNumber); err != nil {
		return nil, fmt.Errorf("decode CRD: %w", err)
	}
	if err := s.SlimObject(obj); err != nil {
		return nil, err
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode CRD: %w", err)
	}
	return append([]byte("---\n"), out...), nil
}

// useNumber keeps numbers as written (an int64 bound would lose precision as
// a float64).
func useNumber(d *json.Decoder) *json.Decoder {
	d.UseNumber()
	return d
}

// SlimObject removes the descriptions of foreign types from the schemas of
// crd, an apiextensions.k8s.io/v1 CustomResourceDefinition decoded into maps
// (as by sigs.k8s.io/yaml or unstructured), in place. It fails, leaving crd
// partly slimmed, on a version without a Go type or a schema that does not
// follow its Go type.
func (s *Slimmer) SlimObject(crd map[string]any) error {
	if crd["apiVersion"] != "apiextensions.k8s.io/v1" || crd["kind"] != "CustomResourceDefinition" {
		return fmt.Errorf("not an apiextensions.k8s.io/v1 CustomResourceDefinition: %v %v", crd["apiVersion"], crd["kind"])
	}
	spec, _ := crd["spec"].(map[string]any)
	names, _ := spec["names"].(map[string]any)
	group, _ := spec["group"].(string)
	kind, _ := names["kind"].(string)
	versions, _ := spec["versions"].([]any)
	if kind == "" || len(versions) == 0 {
		return errors.New("CRD without spec.names.kind or spec.versions")
	}
	for _, v := range versions {
		version, _ := v.(map[string]any)
		name, _ := version["name"].(string)
		gvk := schema.GroupVersionKind{Group: group, Version: name, Kind: kind}
		t, ok := s.types[gvk]
		if !ok {
			return fmt.Errorf("%s: no Go type for this kind", gvk)
		}
		root, _ := version["schema"].(map[string]any)
		openAPI, ok := root["openAPIV3Schema"].(map[string]any)
		if !ok {
			return fmt.Errorf("%s: no schema.openAPIV3Schema", gvk)
		}
		if err := s.value(openAPI, t, ""); err != nil {
			return fmt.Errorf("%s: %w", gvk, err)
		}
	}
	return nil
}

// owns reports whether the descriptions of t's documentation and fields are
// kept: t is declared in the own packages, or unnamed or predeclared (a
// slice, a map, a string), which documents nothing of its own.
func (s *Slimmer) owns(t reflect.Type) bool {
	p := t.PkgPath()
	return p == "" || p == s.own || strings.HasPrefix(p, s.own+"/")
}

// value walks sch, the schema of a value of Go type t at path, removing the
// descriptions of foreign types below it. sch's own description is the
// caller's to decide.
func (s *Slimmer) value(sch map[string]any, t reflect.Type, path string) error {
	t = deref(t)
	if !s.owns(t) {
		for _, sub := range subschemas(sch) {
			stripAll(sub)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		return s.fields(sch, t, path)
	case reflect.Slice, reflect.Array:
		return s.element(sch, "items", t.Elem(), path+"[*]")
	case reflect.Map:
		return s.element(sch, "additionalProperties", t.Elem(), path+"[*]")
	default:
		if len(subschemas(sch)) > 0 {
			return fmt.Errorf("%s: the schema nests schemas under the Go %s %s", pathOrRoot(path), t.Kind(), t)
		}
		return nil
	}
}

// fields walks the properties of sch, the schema of the Go struct t at path.
func (s *Slimmer) fields(sch map[string]any, t reflect.Type, path string) error {
	props, _ := sch["properties"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(props)) {
		sub, ok := props[name].(map[string]any)
		if !ok {
			return fmt.Errorf("%s.%s: the property is not a schema", path, name)
		}
		f, declaredBy, ok := field(t, name)
		if !ok {
			return fmt.Errorf("%s.%s: %s has no field of that JSON name", path, name, t)
		}
		if !s.owns(declaredBy) {
			stripAll(sub)
			continue
		}
		if err := s.value(sub, f.Type, path+"."+name); err != nil {
			return err
		}
	}
	return nil
}

// element walks sch[key], the schema of the elements of a slice or map whose
// element type is elem; its description is elem's documentation.
func (s *Slimmer) element(sch map[string]any, key string, elem reflect.Type, path string) error {
	sub, ok := sch[key].(map[string]any)
	if !ok {
		// No element schema: []byte (a base64 string), or a marker that
		// replaced the schema (preserve-unknown-fields, a Type).
		return nil
	}
	if !s.owns(deref(elem)) {
		stripAll(sub)
		return nil
	}
	return s.value(sub, elem, path)
}

// field returns the field of struct t whose JSON name is name, and the
// struct that declares it: t, or a struct embedded in t (anonymously without
// a JSON name, or tagged ",inline") whose fields encoding/json and
// controller-gen flatten into t's. Fields of t win over embedded ones.
func field(t reflect.Type, name string) (reflect.StructField, reflect.Type, bool) {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-" && opts == "":
			continue
		case tag == "" && (f.Anonymous || slices.Contains(strings.Split(opts, ","), "inline")):
			if e := deref(f.Type); e.Kind() == reflect.Struct {
				embedded = append(embedded, e)
			}
			continue
		case !f.IsExported():
			continue
		case tag == "":
			tag = f.Name
		}
		if tag == name {
			return f, t, true
		}
	}
	for _, e := range embedded {
		if f, declaredBy, ok := field(e, name); ok {
			return f, declaredBy, true
		}
	}
	return reflect.StructField{}, nil, false
}

// stripAll removes the description of sch and of every schema below it.
func stripAll(sch map[string]any) {
	delete(sch, "description")
	for _, sub := range subschemas(sch) {
		stripAll(sub)
	}
}

// subschemas returns the schemas directly nested in sch, by the keywords of
// apiextensions.k8s.io/v1 JSONSchemaProps that hold schemas. Values that are
// data (default, enum, example) are never returned, so a "description" key
// in a default stays.
func subschemas(sch map[string]any) []map[string]any {
	var out []map[string]any
	add := func(v any) {
		switch v := v.(type) {
		case map[string]any:
			out = append(out, v)
		case []any:
			for _, e := range v {
				if m, ok := e.(map[string]any); ok {
					out = append(out, m)
				}
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "additionalItems", "not", "allOf", "anyOf", "oneOf"} {
		add(sch[k])
	}
	for _, k := range []string{"properties", "patternProperties", "definitions", "dependencies"} {
		if m, ok := sch[k].(map[string]any); ok {
			for _, name := range slices.Sorted(maps.Keys(m)) {
				add(m[name])
			}
		}
	}
	return out
}

// deref returns the type t points to, through any number of pointers.
func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func pathOrRoot(path string) string {
	if path == "" {
		return "."
	}
	return path
}
