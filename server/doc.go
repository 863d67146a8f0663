// Package server is the allocator's HTTP API, the wire contract of the
// OpenTelemetry Collector's Prometheus receiver (/scrape_configs, /jobs,
// /jobs/<job>/targets), plus health, metrics, pprof and a status page.
// It is the only package that knows gin. It reads allocation results through a
// small read-only interface and never waits on a rebalance.
package server
