package operator

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
// NewMetrics. shardwise_allocator_informer_synced (shared with the collector
// watcher) and shardwise_allocator_discovery_config_errors_total (shared with
// discovery.Manager) are registered once per registry.
type Metrics struct {
	invalidResource *prometheus.GaugeVec
	crdAvailable    *prometheus.GaugeVec
	informerSynced  *prometheus.GaugeVec
	configErrors    *prometheus.CounterVec
	generations     prometheus.Counter
}

// NewMetrics registers the Watcher's metrics on reg (nil: a private registry).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	s := metricset.New(reg)
	m := &Metrics{
		informerSynced:  metrics.InformerSynced(s),
		configErrors:    metrics.ConfigErrors(s),
		invalidResource: s.GaugeVec("shardwise_allocator_invalid_resources", "prometheus-operator resources skipped as invalid, by kind.", "kind"),
		crdAvailable:    s.GaugeVec("shardwise_allocator_crd_available", "1 when the prometheus-operator resource kind is served by the API server.", "kind"),
		generations: s.Counter("shardwise_allocator_prometheus_cr_generations_total",
			"Scrape config sets generated from prometheus-operator resources and handed to discovery."),
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("register prometheus-operator metrics: %w", err)
	}
	return m, nil
}
