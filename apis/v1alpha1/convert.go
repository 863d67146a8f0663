package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1beta1"
)

// The conversion stashes what the other version cannot express in an
// annotation, so that a round trip through either version returns the
// original spec unchanged (the technique of Cluster API's
// util/conversion.MarshalData):
//
//   - v1alpha1→v1beta1 keeps the v1alpha1 spec under AnnotationV1alpha1Spec
//     when converting the result back would not reproduce it (the config
//     string's comments, order and formatting; minReplicas/maxReplicas given at
//     the top level; false written out for a boolean);
//   - v1beta1→v1alpha1 keeps the v1beta1 spec under AnnotationV1beta1Spec
//     when converting back would not reproduce it (fields v1alpha1 lacks, such
//     as readinessProbe or configVersions; selectors with matchExpressions).
//
// A stash is used only while it still converts to the spec it accompanies,
// up to fields the API server added since (schema defaults): after an edit
// through the other version it no longer does and the field-by-field
// conversion wins. Each conversion drops the stash of the
// version it produces, so stashes never pile up.
const (
	AnnotationV1alpha1Spec = "shardwise.io/v1alpha1-spec"
	AnnotationV1beta1Spec  = "shardwise.io/v1beta1-spec"
)

var _ conversion.Convertible = (*OpenTelemetryCollector)(nil)

// ConvertTo converts this collector to the hub, v1beta1.
func (c *OpenTelemetryCollector) ConvertTo(hub conversion.Hub) error {
	dst, ok := hub.(*v1beta1.OpenTelemetryCollector)
	if !ok {
		return fmt.Errorf("convert v1alpha1 OpenTelemetryCollector to %T: unsupported hub", hub)
	}
	return ToV1beta1(c, dst)
}

// ConvertFrom converts the hub, v1beta1, to this collector.
func (c *OpenTelemetryCollector) ConvertFrom(hub conversion.Hub) error {
	src, ok := hub.(*v1beta1.OpenTelemetryCollector)
	if !ok {
		return fmt.Errorf("convert %T to v1alpha1 OpenTelemetryCollector: unsupported hub", hub)
	}
	return FromV1beta1(src, c)
}

// ToV1beta1 converts src to dst field by field, with the stashes described at
// AnnotationV1alpha1Spec.
func ToV1beta1(src *OpenTelemetryCollector, dst *v1beta1.OpenTelemetryCollector) error {
	spec, annotations, err := convertSpec(&src.Spec, src.Annotations, specToV1beta1, specFromV1beta1, AnnotationV1beta1Spec, AnnotationV1alpha1Spec)
	if err != nil {
		return fmt.Errorf("convert OpenTelemetryCollector %s/%s to v1beta1: %w", src.Namespace, src.Name, err)
	}
	src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	dst.Annotations = annotations
	dst.Spec = *spec
	src.Status.DeepCopyInto(&dst.Status)
	return nil
}

// FromV1beta1 converts src to dst field by field, with the stashes described
// at AnnotationV1alpha1Spec.
func FromV1beta1(src *v1beta1.OpenTelemetryCollector, dst *OpenTelemetryCollector) error {
	spec, annotations, err := convertSpec(&src.Spec, src.Annotations, specFromV1beta1, specToV1beta1, AnnotationV1alpha1Spec, AnnotationV1beta1Spec)
	if err != nil {
		return fmt.Errorf("convert OpenTelemetryCollector %s/%s to v1alpha1: %w", src.Namespace, src.Name, err)
	}
	src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	dst.Annotations = annotations
	dst.Spec = *spec
	src.Status.DeepCopyInto(&dst.Status)
	return nil
}

// convertSpec converts spec with there, one direction of the conversion
// (back is the other). The spec the other version stashed in annotation
// stashed is restored when it still converts back to spec (the fields this
// version cannot express survive a round trip); spec itself is stashed in
// annotation own when what it converts to does not convert back to it. It
// returns the annotations without the consumed stash, nil when empty.
func convertSpec[From, To any](spec *From, annotations map[string]string, there func(*From) (*To, error), back func(*To) (*From, error), stashed, own string) (*To, map[string]string, error) {
	out, err := there(spec)
	if err != nil {
		return nil, nil, err
	}
	annotations = maps.Clone(annotations)
	if s, ok := annotations[stashed]; ok {
		delete(annotations, stashed)
		var orig To
		if json.Unmarshal([]byte(s), &orig) == nil {
			if b, err := back(&orig); err == nil && subset(b, spec) {
				out = &orig
			}
		}
	}
	if b, err := back(out); err != nil || !equality.Semantic.DeepEqual(*b, *spec) {
		if annotations, err = stash(annotations, own, *spec); err != nil {
			return nil, nil, err
		}
	}
	return out, emptyToNil(annotations), nil
}

func stash(annotations map[string]string, key string, spec any) (map[string]string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("stash spec in annotation %s: %w", key, err)
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[key] = string(b)
	return annotations, nil
}

// subset reports whether every field set in a's JSON form is set to the same
// value in b's: b may have more, such as the defaults the API server applied
// after the conversion that wrote the stash. Lists compare whole.
func subset(a, b any) bool {
	var ma, mb any
	for _, p := range []struct {
		in  any
		out *any
	}{{a, &ma}, {b, &mb}} {
		j, err := json.Marshal(p.in)
		if err != nil || json.Unmarshal(j, p.out) != nil {
			return false
		}
	}
	return jsonSubset(ma, mb)
}

func jsonSubset(a, b any) bool {
	am, ok := a.(map[string]any)
	if !ok {
		return equality.Semantic.DeepEqual(a, b)
	}
	bm, ok := b.(map[string]any)
	if !ok {
		return false
	}
	for k, av := range am {
		bv, ok := bm[k]
		if !ok || !jsonSubset(av, bv) {
			return false
		}
	}
	return true
}

func emptyToNil(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// errNoConfig is returned for a v1alpha1 spec whose config is not a YAML object.
var errNoConfig = errors.New("spec.config is not a YAML object")

// parseConfig reads a v1alpha1 config string.
func parseConfig(s string) (v1beta1.Config, error) {
	var cfg v1beta1.Config
	if s == "" {
		return cfg, nil
	}
	j, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		return cfg, fmt.Errorf("parse spec.config: %w", err)
	}
	if len(j) == 0 || j[0] != '{' {
		return cfg, errNoConfig
	}
	if err := json.Unmarshal(j, &cfg); err != nil {
		return cfg, fmt.Errorf("parse spec.config: %w", err)
	}
	return cfg, nil
}

// formatConfig writes a v1beta1 config as a v1alpha1 config string.
func formatConfig(cfg *v1beta1.Config) (string, error) {
	j, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("format spec.config: %w", err)
	}
	// Empty only when it reads as the zero config: semantic equality would
	// also call a config of empty maps empty (pipelines: {} would come back
	// null).
	if zero, err := json.Marshal(v1beta1.Config{}); err == nil && bytes.Equal(j, zero) {
		return "", nil
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return "", fmt.Errorf("format spec.config: %w", err)
	}
	return string(y), nil
}

func specToV1beta1(in *OpenTelemetryCollectorSpec) (*v1beta1.OpenTelemetryCollectorSpec, error) {
	c := in.DeepCopy()
	cfg, err := parseConfig(c.Config)
	if err != nil {
		return nil, err
	}
	out := &v1beta1.OpenTelemetryCollectorSpec{}
	copyCommon(out, c)
	out.Config = cfg
	out.TargetAllocator = targetAllocatorToV1beta1(&c.TargetAllocator)
	out.Configmaps = c.ConfigMaps
	out.Autoscaler = autoscalerToV1beta1(c.Autoscaler, c.MinReplicas, c.MaxReplicas)
	if c.HostNetwork {
		out.HostNetwork = &c.HostNetwork
	}
	if c.ShareProcessNamespace {
		out.ShareProcessNamespace = &c.ShareProcessNamespace
	}
	if c.PriorityClassName != "" {
		out.PriorityClassName = &c.PriorityClassName
	}
	if !equality.Semantic.DeepEqual(c.UpdateStrategy, appsv1.DaemonSetUpdateStrategy{}) {
		out.DaemonSetUpdateStrategy = &c.UpdateStrategy
	}
	if !equality.Semantic.DeepEqual(c.DeploymentUpdateStrategy, appsv1.DeploymentStrategy{}) {
		out.DeploymentUpdateStrategy = &c.DeploymentUpdateStrategy
	}
	return out, nil
}

// autoscalerToV1beta1 folds the deprecated top-level bounds into the
// autoscaler, as upstream: the autoscaler's own bounds win.
func autoscalerToV1beta1(in *v1beta1.AutoscalerSpec, minReplicas, maxReplicas *int32) *v1beta1.AutoscalerSpec {
	if in == nil && minReplicas == nil && maxReplicas == nil {
		return nil
	}
	if in == nil {
		in = &v1beta1.AutoscalerSpec{}
	}
	if in.MinReplicas == nil {
		in.MinReplicas = minReplicas
	}
	if in.MaxReplicas == nil {
		in.MaxReplicas = maxReplicas
	}
	return in
}

func targetAllocatorToV1beta1(in *OpenTelemetryTargetAllocator) v1beta1.TargetAllocatorEmbedded {
	var out v1beta1.TargetAllocatorEmbedded
	copyCommon(&out, in)
	out.PrometheusCR = v1beta1.TargetAllocatorPrometheusCR{
		Enabled:        in.PrometheusCR.Enabled,
		ScrapeInterval: in.PrometheusCR.ScrapeInterval,
		// An empty map selects every monitor, like an empty selector;
		// upstream converts the same way.
		PodMonitorSelector:     &metav1.LabelSelector{MatchLabels: in.PrometheusCR.PodMonitorSelector},
		ServiceMonitorSelector: &metav1.LabelSelector{MatchLabels: in.PrometheusCR.ServiceMonitorSelector},
		PrometheusCRTenancy:    *in.PrometheusCR.PrometheusCRTenancy.DeepCopy(),
	}
	return out
}

func specFromV1beta1(in *v1beta1.OpenTelemetryCollectorSpec) (*OpenTelemetryCollectorSpec, error) {
	c := in.DeepCopy()
	cfg, err := formatConfig(&c.Config)
	if err != nil {
		return nil, err
	}
	out := &OpenTelemetryCollectorSpec{}
	copyCommon(out, c)
	out.Config = cfg
	out.TargetAllocator = targetAllocatorFromV1beta1(&c.TargetAllocator)
	out.ConfigMaps = c.Configmaps
	if c.HostNetwork != nil {
		out.HostNetwork = *c.HostNetwork
	}
	if c.ShareProcessNamespace != nil {
		out.ShareProcessNamespace = *c.ShareProcessNamespace
	}
	if c.PriorityClassName != nil {
		out.PriorityClassName = *c.PriorityClassName
	}
	if c.DaemonSetUpdateStrategy != nil {
		out.UpdateStrategy = *c.DaemonSetUpdateStrategy
	}
	if c.DeploymentUpdateStrategy != nil {
		out.DeploymentUpdateStrategy = *c.DeploymentUpdateStrategy
	}
	return out, nil
}

func targetAllocatorFromV1beta1(in *v1beta1.TargetAllocatorEmbedded) OpenTelemetryTargetAllocator {
	var out OpenTelemetryTargetAllocator
	copyCommon(&out, in)
	out.PrometheusCR = OpenTelemetryTargetAllocatorPrometheusCR{
		Enabled:             in.PrometheusCR.Enabled,
		ScrapeInterval:      in.PrometheusCR.ScrapeInterval,
		PrometheusCRTenancy: *in.PrometheusCR.PrometheusCRTenancy.DeepCopy(),
	}
	// v1alpha1 has only matchLabels; the stash keeps the rest.
	if s := in.PrometheusCR.PodMonitorSelector; s != nil {
		out.PrometheusCR.PodMonitorSelector = s.MatchLabels
	}
	if s := in.PrometheusCR.ServiceMonitorSelector; s != nil {
		out.PrometheusCR.ServiceMonitorSelector = s.MatchLabels
	}
	return out
}

// copyCommon copies into dst (a pointer to a struct) every field of src (a
// pointer to a struct) with the same name and type, embedded structs
// flattened: the fields both versions spell alike. Each conversion then sets
// the fields that differ.
func copyCommon(dst, src any) {
	from := map[string]reflect.Value{}
	eachField(reflect.ValueOf(src).Elem(), func(f reflect.StructField, v reflect.Value) { from[f.Name] = v })
	eachField(reflect.ValueOf(dst).Elem(), func(f reflect.StructField, v reflect.Value) {
		if s, ok := from[f.Name]; ok && s.Type() == f.Type && f.IsExported() {
			v.Set(s)
		}
	})
}

// eachField calls fn with every field of the struct v, the fields of
// embedded structs in place of them.
func eachField(v reflect.Value, fn func(reflect.StructField, reflect.Value)) {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			eachField(v.Field(i), fn)
			continue
		}
		fn(f, v.Field(i))
	}
}
