// Package instrumentation is the pure pod mutator behind OpenTelemetry
// auto-instrumentation: given a pod, its namespace's metadata, the
// Instrumentation resources its annotations resolve to, its owner chain and
// the operator's settings, it injects the language agents and the OTEL_*
// environment exactly as the upstream OpenTelemetry Operator does, and says
// per language what it did and why not.
//
// Invariants: no Kubernetes client, no I/O; the same input gives the same pod;
// mutating an already mutated pod changes nothing (a pod that carries an
// agent, or the injected marker annotation, is left alone); a container's own
// environment variable is never overwritten (list variables such as
// JAVA_TOOL_OPTIONS, PYTHONPATH and NODE_OPTIONS are extended).
package instrumentation
