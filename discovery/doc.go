// Package discovery turns configuration and the cluster into the allocator's
// inputs: scrape configs, targets (after the relabel filter, with their
// identity) and collectors.
//
// Prometheus service discovery feeds target groups per job; each job's
// relabel_configs decide which targets exist; prometheus-operator resources
// become scrape configs through prometheus-operator's own generator; collector
// pods (or a static list) become the collector set. On failure discovery keeps
// the last good state and never publishes a partial target set.
//
// # Configuration
//
// ParseConfig reads this package's keys of the allocator config file (the
// OpenTelemetry Operator's targetallocator.yaml): `config:` (a Prometheus
// configuration, parsed by Prometheus' loader with UTF-8 label-name
// validation, whatever prometheus-operator's init set the global to),
// `filter_strategy`, `prometheus_cr:`, `collector_namespace`,
// `collector_selector`, `collector_not_ready_grace_period` and `collectors:`.
// Other keys are ignored. Errors wrap ErrConfig and name the field.
//
// # Wiring
//
//	metrics, _ := discovery.NewMetrics(reg)                  // once per registry
//	mgr, _ := discovery.NewManager(discovery.ManagerOptions{Logger: log, Metrics: metrics,
//		FilterStrategy: cfg.FilterStrategy, WaitForOperatorConfig: cfg.PrometheusCR.Enabled})
//	_ = mgr.ApplyConfig(cfg.Prometheus())                    // and on every reload
//	go mgr.Run(ctx)                                          // closes mgr.Updates() on return
//	for u := range mgr.Updates() { ... }                     // u.ScrapeConfigs, u.Targets
//
//	// with prometheus_cr.enabled:
//	w, _ := discovery.NewOperatorWatcher(kube, mon, mgr, discovery.OperatorWatcherOptions{
//		Config: cfg.PrometheusCR, Namespace: cfg.Collector.CollectorNamespace, Logger: log, Metrics: metrics})
//	go w.Run(ctx)                                            // calls mgr.ApplyOperatorConfig
//
//	// collectors: discovery.StaticCollectors(cfg.Collector.Collectors), or
//	cw, _ := discovery.NewCollectorWatcher(kube, discovery.CollectorWatcherOptions{...})
//	go cw.Run(ctx)                                           // closes cw.Updates() on return
//
// # Contracts
//
//   - Manager.Updates: the first Update carries ScrapeConfigs (possibly
//     empty) and every job's targets; it is sent once every service
//     discovery provider of every job has delivered its initial targets
//     (and, with WaitForOperatorConfig, once prometheus-operator jobs
//     arrived, however long that takes), at once when there are no jobs, at
//     the latest after FirstSyncTimeout (30s) with the late jobs in
//     Update.Pending. A job whose providers have not all reported keeps its
//     earlier targets (a reload never empties it in between) or, without
//     any, is pending: never served as empty. Later Updates carry ScrapeConfigs only
//     when the job set changed, and Targets only for jobs whose target set
//     changed, each with its complete set (an empty slice: no targets). At
//     most one Update per CoalesceInterval (1s by default); a slow consumer
//     gets pending changes merged, never lost. Everything sent is immutable.
//     Run closes the channel when it returns.
//   - Manager.ApplyConfig / ApplyOperatorConfig may be called from any
//     goroutine, before or during Run; on error nothing changes. The job set is
//     the union of both; a file job wins a name clash. ScrapeConfigs returns
//     the current set (immutable) at any time.
//   - CollectorWatcher.Updates: first the set once the pod cache synced (a
//     list that fails, RBAC say, is reported every SyncTimeout and waited
//     for), then the whole set after each change; a slow consumer gets the
//     latest. Run closes the channel when it returns. Membership keeps
//     history: a ready pod joins; a collector whose pod is not ready,
//     terminating or deleted stays for the grace period (a StatefulSet
//     rolling restart moves nothing); a pod never a collector joins only
//     once ready.
//   - Reload: Manager.ApplyConfig takes a new `config:` block at any time. A
//     changed prometheus_cr block or collector selection needs its watcher
//     replaced: cancel its Run and start a new one (the Manager keeps the
//     previous operator jobs until the new watcher's first generation).
//   - OperatorWatcher.Run calls ConfigSink.ApplyOperatorConfig with the whole
//     generated job set after its caches sync (at most SyncTimeout, 15s:
//     a kind or the namespaces it cannot list are left out, logged and
//     reported by shardwise_allocator_informer_synced, and picked up once
//     listed) and after each change; a failed generation keeps the last.
//     Referenced Secrets and ConfigMaps are read with get through a cache
//     of one CRDPollInterval.
//
// # Kubernetes access
//
// OperatorWatcher lists namespaces cluster-wide (for namespace selectors) and
// watches the four resource kinds cluster-wide, or per namespace when
// allow_namespaces is set; it creates Events and gets the Secrets and
// ConfigMaps a resource references from the resource's own namespace, only
// in prometheus_cr.secret_namespaces when that is set.
// ManagerOptions.KubeConfigFile is given to the kubernetes_sd of generated jobs
// for runs outside a cluster; the served configs never carry it.
//
// # Targets
//
// allocation.Target.Labels are the discovered labels before relabeling (group
// labels merged with target labels, target wins), without the __meta_* labels
// no relabel rule of the jobs sharing the provider reads (labeluse.go: each
// provider's groups are trimmed as they arrive; the relabeled targets are the
// same, and Prometheus' manager and the filter hold small label maps). Hash is the identity: xxhash
// of the job and the relabeled labels without __meta_*, after seeding job,
// __scheme__, __metrics_path__, __scrape_interval__, __scrape_timeout__ and
// __param_* from the scrape config where absent. Targets of one job with the
// same identity are one target; the newest discovered labels are served. As
// in Prometheus, a label with an empty value is no label.
//
// Relabeling uses Prometheus' relabel.ProcessBuilder, except for the rules
// prometheus-operator generates most (copies, constants, a literal prefix
// cut, keep/drop on literal values, lowercase, keepequal and their kin),
// which run without a regular expression on the discovered label sets as
// sent, with identical results (property-tested against ProcessBuilder).
// prometheus-operator's sharding rules (__tmp_hash, $(SHARD)) are removed
// before filtering so every target is seen; the configs served keep them
// (the collector substitutes $(SHARD)).
package discovery
