package discovery

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	promdiscovery "github.com/prometheus/prometheus/discovery"

	"github.com/shardwise/shardwise/discovery/internal/metrics"
)

// Metrics are the Manager's metrics, registered on the registerer given to
// NewMetrics, with those of Prometheus' service discovery. One Metrics serves
// one Manager.
type Metrics struct {
	reg prometheus.Registerer
	sd  *promdiscovery.SDMetrics

	targets      *prometheus.GaugeVec
	passDuration prometheus.Histogram
	updates      prometheus.Counter
	jobPending   *prometheus.GaugeVec
	configErrors *prometheus.CounterVec // shared with the operator watcher
}

// NewMetrics registers the Manager's metrics, and those of Prometheus'
// service discovery, on reg (nil: a private registry).
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
		jobPending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardwise_allocator_discovery_job_pending",
			Help: "1 for a job whose service discovery providers have not all reported yet and that has no earlier targets; its targets are answered with 503 until they do.",
		}, []string{"job_name"}),
	}
	if m.configErrors, err = metrics.ConfigErrors(reg); err != nil {
		return nil, fmt.Errorf("register discovery metrics: %w", err)
	}
	for _, c := range []prometheus.Collector{m.targets, m.passDuration, m.updates, m.jobPending} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register discovery metrics: %w", err)
		}
	}
	return m, nil
}
