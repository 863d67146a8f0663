// Package server is the allocator's HTTP API, the wire contract of the
// OpenTelemetry Collector's Prometheus receiver (/scrape_configs, /jobs,
// /jobs/<job>/targets), plus health, metrics, a status page and, when
// enabled, pprof.
// It is the only package that knows gin. It reads allocation results through a
// small read-only interface and never waits on a rebalance.
//
// Invariants:
//   - Job names arrive query-escaped in the raw path
//     (/jobs/serviceMonitor%2Fns%2Fapp%2F0/targets); the router matches the
//     escaped path and the segment is url.QueryUnescape'd, so names with '/',
//     '+', '%' and spaces round-trip.
//   - /jobs/<job>/targets?collector_id=X always answers 200 with a JSON list
//     ([] for an unknown job or collector) in the slice's stable order. Its
//     bytes are serialized once per allocation.Slice Version and served from
//     a cache bounded in bytes (least recently used evicted first) with a
//     content-hash ETag; the hot path does no JSON encoding. Bodies of
//     2 KiB or more are kept gzip-compressed and expanded as they are
//     written (the collectors' http_sd client does not accept gzip): the
//     labels of Kubernetes targets shrink ~25 times. Without
//     collector_id the whole-job object is cached per snapshot. Only a
//     malformed request gets a 400 with {"error": "..."}.
//   - Work per request is bounded: connections have read-header, read,
//     write and idle timeouts; the status page summary is computed once per
//     snapshot; pprof is off unless Options.EnablePprof, and its profile
//     durations are capped (400 above maxProfileDuration).
//   - With HTTPS (mutual TLS) configured, the plain HTTP listener answers
//     403 for the target API (/, /scrape_configs, /jobs...) and keeps
//     serving /livez, /readyz, /metrics and pprof, unless
//     HTTPSOptions.PlainHTTPAPI: discovered labels are served only to
//     authenticated collectors.
//   - /scrape_configs always answers a JSON object. Secrets are "<secret>"
//     unless the request came over verified mutual TLS or insecure delivery
//     was allowed; the decision is per request and per Server, never the
//     process-global prometheus/common config.MarshalSecretValue.
//   - The package mutates no process-wide state: not gin's mode or writers,
//     not the default Prometheus registry. The process owner (cmd/allocator)
//     calls gin.SetMode(gin.ReleaseMode) once at start-up; a library must not.
//     (Importing net/http/pprof registers its handlers on
//     http.DefaultServeMux, which the server does not serve.)
package server
