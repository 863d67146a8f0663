package collector

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardwise/shardwise/discovery/internal/informer"
	"github.com/shardwise/shardwise/discovery/internal/metrics"
	"github.com/shardwise/shardwise/internal/metricset"
)

// DefaultSyncTimeout is the default of WatcherOptions.SyncTimeout.
const DefaultSyncTimeout = informer.DefaultSyncTimeout

// Metrics are the Watcher's metrics, registered on the registerer given to
// NewMetrics. shardwise_allocator_informer_synced is shared with the
// prometheus-operator watcher: it is registered once per registry.
type Metrics struct {
	collectors     prometheus.Gauge
	notReady       prometheus.Gauge
	informerSynced *prometheus.GaugeVec
}

// NewMetrics registers the Watcher's metrics on reg (nil: a private registry).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	s := metricset.New(reg)
	m := &Metrics{
		informerSynced: metrics.InformerSynced(s),
		collectors: s.Gauge("shardwise_allocator_discovered_collectors",
			"Collector pods found by collector discovery (shardwise_allocator_collectors is what the allocator uses)."),
		notReady: s.Gauge("shardwise_allocator_collectors_not_ready", "Collector pods not ready but within their grace period."),
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("register collector metrics: %w", err)
	}
	return m, nil
}

// synced is the informer gauge; nil when m is.
func (m *Metrics) synced() *prometheus.GaugeVec {
	if m == nil {
		return nil
	}
	return m.informerSynced
}
