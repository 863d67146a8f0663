// Package e2e proves the allocator against its real client: the OpenTelemetry
// Collector's Prometheus receiver (collector-contrib receiver/prometheusreceiver),
// unchanged, configured with a target_allocator block.
//
// The tests start the allocator binary named by SHARDWISE_ALLOCATOR_BIN (make
// test-e2e builds it), loopback HTTP servers serving Prometheus metrics as
// targets, and one receiver per collector id in this process, then check that
// every target is scraped by exactly the collector the allocator assigns it to,
// also after the collector set or the discovered targets change.
//
// This is a module of its own and must not import the main module: the receiver
// needs a newer Prometheus than the main module's prometheus-operator generator
// compiles with. It talks to the allocator over HTTP only, as a collector does.
//
// Without SHARDWISE_ALLOCATOR_BIN the tests skip; with it they fail on any
// deviation. The ServiceMonitor test also needs KUBEBUILDER_ASSETS (the
// directory printed by hack/envtest.sh).
package e2e
