// Package v1beta1 holds the OpenTelemetryCollector API of group
// opentelemetry.io, version v1beta1, with the field names, JSON tags, defaults
// and enums of the upstream OpenTelemetry Operator for the subset shardwise
// implements, so manifests written for upstream apply unchanged.
//
// Invariant: an upstream field shardwise does not implement is declared with a
// schemaless, unknown-field-preserving schema and rejected by a CEL rule on its
// parent that names it. Structural schemas prune undeclared fields silently;
// declaring them is what turns "silently ignored" into "rejected".
//
// +kubebuilder:object:generate=true
// +groupName=opentelemetry.io
package v1beta1
