// Package cluster measures the allocator as a whole process against a real
// API server (envtest's kube-apiserver and etcd): it creates a cluster
// through the API (workload pods with realistic metadata and status,
// their Services, EndpointSlices of 100 endpoints, one ServiceMonitor per
// workload, collector pods made Ready through the status subresource),
// starts one or more allocator binaries with prometheus_cr and
// pod-discovered collectors, and measures each: the time until every kept
// target is served exactly once (checked over HTTP as collectors read it),
// RSS over time, idle CPU, the API requests it made (from the API server's
// audit log, restricted to the allocator's own user), its live heap split
// into informer caches and the rest, a rolling update of one Deployment,
// and optionally the polling load of many collectors.
//
// Layout: allocator k selects the ServiceMonitors and collector pods labelled
// bench.shardwise.io/allocator=a<k>; its workloads live in up to ten
// namespaces a<k>-team-NN and its collectors in a<k>-observability. Every
// workload pod exposes http (8080) and metrics (9090), both in the
// EndpointSlices; the ServiceMonitor scrapes metrics, so half of the
// discovered targets are kept.
package cluster
