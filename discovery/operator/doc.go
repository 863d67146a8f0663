// Package operator turns prometheus-operator resources (ServiceMonitors,
// PodMonitors, Probes, ScrapeConfigs) into scrape configs with
// prometheus-operator's own resource selector and config generator, so job
// names and relabelings match prometheus-operator's.
//
// # Contract
//
// Watcher.Run may be called once and returns nil when ctx is done. It calls
// ConfigSink.ApplyOperatorConfig (discovery.Manager implements it) with the
// whole generated job set after its caches sync (at most SyncTimeout, 15s: a
// kind or the namespaces it cannot list are left out, logged and reported by
// shardwise_allocator_informer_synced, and picked up once listed), then
// after every change (coalesced to one per MinInterval) and every
// CRDPollInterval. A kind whose CRD is absent is looked for again every
// CRDPollInterval and watched once installed. An invalid resource is
// skipped with a Warning event and shardwise_allocator_invalid_resources; a
// failed generation keeps the previous job set.
//
// # Kubernetes access
//
// The Watcher lists namespaces cluster-wide (for namespace selectors) and
// watches the four kinds cluster-wide, or per namespace when
// allow_namespaces is set; it creates Events and gets the Secrets and
// ConfigMaps a resource references from the resource's own namespace (only
// from prometheus_cr.secret_namespaces when that is set), through a cache of
// one CRDPollInterval.
//
// Linking prometheus-operator switches Prometheus' global label-name
// validation to the legacy scheme; this package's init sets it back to
// UTF-8 (allocatorconfig also sets it wherever it loads a config).
package operator
