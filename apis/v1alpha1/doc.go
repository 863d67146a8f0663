// Package v1alpha1 holds the TargetAllocator and OpAMPBridge APIs of group opentelemetry.io,
// version v1alpha1, field-compatible with the upstream OpenTelemetry Operator
// for the subset shardwise implements. Unsupported upstream fields are
// rejected by name, as in package v1beta1.
//
// +kubebuilder:object:generate=true
// +groupName=opentelemetry.io
package v1alpha1
