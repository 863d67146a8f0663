// Package metrics declares the metrics that more than one discovery package
// reports into. Each is registered once per registry (metricset.Set.Shared):
// the first package to declare it registers it, the others get that one.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardwise/shardwise/internal/metricset"
)

// SourceFile and SourceOperator are the source label values of ConfigErrors.
const (
	SourceFile     = "file"
	SourceOperator = "prometheus-operator"
)

// ConfigErrors is shardwise_allocator_discovery_config_errors_total{source}:
// the Manager counts rejected file job sets, the operator watcher failed
// generations.
func ConfigErrors(s *metricset.Set) *prometheus.CounterVec {
	return s.Shared().CounterVec("shardwise_allocator_discovery_config_errors_total",
		"Scrape configuration sets rejected, by source; the last good set stays in use.", "source")
}

// InformerSynced is shardwise_allocator_informer_synced{resource}, set by the
// operator watcher and the collector watcher.
func InformerSynced(s *metricset.Set) *prometheus.GaugeVec {
	return s.Shared().GaugeVec("shardwise_allocator_informer_synced",
		"1 when the allocator has listed the Kubernetes resource (collector pods, namespaces, each prometheus-operator kind); 0 when it cannot (RBAC forbids it, the API server does not answer).",
		"resource")
}
