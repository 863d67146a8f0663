// Package webhook holds the operator's admission handlers.
//
// PodHandler serves /mutate-v1-pod: it decodes the pod, reads the pod's
// namespace from the manager's cache and runs a chain of PodMutators on it,
// each on its own copy, so a mutator that fails is dropped alone and never
// takes another mutator's changes with it (upstream drops the whole patch).
// Whatever a mutator could not do becomes a Warning event on the pod's owner
// (or its namespace, for a bare pod), an admission warning the client sees,
// and a metric; never only a log line.
//
// SidecarMutator, first in the chain, resolves the OpenTelemetryCollector
// (mode sidecar) a pod's sidecar.opentelemetry.io/inject annotation names
// and the owner chain through the cache, then calls the pure mutator of
// package sidecar; whether the sidecar is native is settled once from the API
// server's version.
//
// InstrumentationMutator resolves what the pure mutator of package
// instrumentation needs (the Instrumentations named by the pod's annotations,
// the owner chain for the service name) through the cache, then calls it.
package webhook
