// Package discovery runs Prometheus service discovery for the allocator's
// jobs and turns it into the allocator's inputs: the job set (scrape
// configs) and each job's targets, after the relabel filter, with their
// identity. It is the allocator's counterpart of prometheus'
// discovery.Manager; its siblings are discovery/relabel (the filter and
// target identity), discovery/operator (scrape configs from
// prometheus-operator resources, fed to Manager.ApplyOperatorConfig) and
// discovery/collector (the collector set).
//
// # Contract
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
//   - Manager.Run may be called once; it returns nil when ctx is done and
//     closes the Updates channel when it returns.
//   - Manager.ApplyConfig / ApplyOperatorConfig may be called from any
//     goroutine, before or during Run; on error nothing changes (the last
//     good job set stays in use). The job set is the union of both; a file
//     job wins a name clash. ScrapeConfigs returns the current set
//     (immutable) at any time.
//   - Reload: ApplyConfig takes a new `config:` block at any time. A
//     changed prometheus_cr block or collector selection needs its watcher
//     replaced: cancel its Run and start a new one (the Manager keeps the
//     previous operator jobs until the new watcher's first generation).
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
// ManagerOptions.KubeConfigFile is given to the kubernetes_sd of
// prometheus-operator jobs for runs outside a cluster; the served configs
// never carry it.
//
// # Targets
//
// allocation.Target.Labels are the discovered labels before relabeling
// (group labels merged with target labels, target wins), without the
// __meta_* labels no relabel rule of the jobs sharing the provider reads:
// each provider's groups are trimmed as they arrive (relabel.Trimmer, shared
// per provider in provideruse.go); the relabeled targets are the same, and
// Prometheus' manager and the filter hold small label maps. Target identity
// and relabeling are package relabel's.
package discovery
