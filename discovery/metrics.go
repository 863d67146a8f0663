package discovery

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	promdiscovery "github.com/prometheus/prometheus/discovery"
)

// Metrics are the metrics of this package, registered on the registerer
// given to NewMetrics. One Metrics serves one Manager, one OperatorWatcher and
// one CollectorWatcher.
type Metrics struct {
	reg prometheus.Registerer
	sd  map[string]promdiscovery.DiscovererMetrics

	targets         *prometheus.GaugeVec
	passDuration    prometheus.Histogram
	updates         prometheus.Counter
	configErrors    *prometheus.CounterVec
	invalidResource *prometheus.GaugeVec
	crdAvailable    *prometheus.GaugeVec
	collectors      prometheus.Gauge
	notReady        prometheus.Gauge
	jobPending      *prometheus.GaugeVec
	informerSynced  *prometheus.GaugeVec
}

// NewMetrics registers the metrics of this package, and those of Prometheus'
// service discovery, on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	sd, err := promdiscovery.CreateAndRegisterSDMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("register service discovery metrics: %w", err)
	}
	m := &Metrics{
		reg: reg,
		sd:  sd,
		targets: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardwise_allocator_discovery_targets",
			Help: "Targets per job after the relabel filter.",
		}, []string{"job_name"}),
		passDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "shardwise_allocator_discovery_pass_duration_seconds",
			Help:    "Time to turn one discovery update into targets.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9),
		}),
		updates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardwise_allocator_discovery_updates_total",
			Help: "Updates sent to the allocator.",
		}),
		configErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardwise_allocator_discovery_config_errors_total",
			Help: "Scrape configuration sets rejected, by source; the last good set stays in use.",
		}, []string{"source"}),
		invalidResource: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardwise_allocator_invalid_resources",
			Help: "prometheus-operator resources skipped as invalid, by kind.",
		}, []string{"kind"}),
		crdAvailable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardwise_allocator_crd_available",
			Help: "1 when the prometheus-operator resource kind is served by the API server.",
		}, []string{"kind"}),
		collectors: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardwise_allocator_discovered_collectors",
			Help: "Collector pods found by collector discovery (shardwise_allocator_collectors is what the allocator uses).",
		}),
		notReady: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardwise_allocator_collectors_not_ready",
			Help: "Collector pods not ready but within their grace period.",
		}),
		jobPending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardwise_allocator_discovery_job_pending",
			Help: "1 for a job whose service discovery providers have not all reported yet and that has no earlier targets; its targets are answered with 503 until they do.",
		}, []string{"job_name"}),
		informerSynced: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardwise_allocator_informer_synced",
			Help: "1 when the allocator has listed the Kubernetes resource (collector pods, namespaces, each prometheus-operator kind); 0 when it cannot (RBAC forbids it, the API server does not answer).",
		}, []string{"resource"}),
	}
	for _, c := range []prometheus.Collector{
		m.targets, m.passDuration, m.updates, m.configErrors, m.invalidResource,
		m.crdAvailable, m.collectors, m.notReady, m.jobPending, m.informerSynced,
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register discovery metrics: %w", err)
		}
	}
	return m, nil
}
