// Package v1alpha1 holds the TargetAllocator, OpAMPBridge, Instrumentation and
// (deprecated, converted to v1beta1) OpenTelemetryCollector APIs of group opentelemetry.io,
// version v1alpha1, field-compatible with the upstream OpenTelemetry Operator
// for the subset shardwise implements. Unsupported upstream fields are
// rejected by name, as in package v1beta1.
//
// Besides k8s.io/api and k8s.io/apimachinery, this package imports
// sigs.k8s.io/controller-runtime/pkg/conversion (a leaf that only depends on
// apimachinery) because the conversion webhook finds converters through the
// Convertible methods of the scheme's own types, and sigs.k8s.io/yaml (a
// dependency of apimachinery) to read and write the v1alpha1 config string.
//
// +kubebuilder:object:generate=true
// +groupName=opentelemetry.io
package v1alpha1
