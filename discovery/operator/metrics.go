package operator

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardwise/shardwise/discovery/internal/informer"
	"github.com/shardwise/shardwise/discovery/internal/metrics"
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
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	synced, err := metrics.InformerSynced(reg)
	if err != nil {
		return nil, fmt.Errorf("register prometheus-operator metrics: %w", err)
	}
	configErrors, err := metrics.ConfigErrors(reg)
	if err != nil {
		return nil, fmt.Errorf("register prometheus-operator metrics: %w", err)
	}
	m := &Metrics{
		informerSynced: synced,
		configErrors:   configErrors,
		invalidResource: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardwise_allocator_invalid_resources",
			Help: "prometheus-operator resources skipped as invalid, by kind.",
		}, []string{"kind"}),
		crdAvailable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardwise_allocator_crd_available",
			Help: "1 when the prometheus-operator resource kind is served by the API server.",
		}, []string{"kind"}),
		generations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardwise_allocator_prometheus_cr_generations_total",
			Help: "Scrape config sets generated from prometheus-operator resources and handed to discovery.",
		}),
	}
	for _, c := range []prometheus.Collector{m.invalidResource, m.crdAvailable, m.generations} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register prometheus-operator metrics: %w", err)
		}
	}
	return m, nil
}
