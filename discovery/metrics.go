package discovery

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	promdiscovery "github.com/prometheus/prometheus/discovery"

	"github.com/shardwise/shardwise/discovery/internal/metrics"
	"github.com/shardwise/shardwise/internal/metricset"
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
	s := metricset.New(reg)
	m := &Metrics{
		reg:          reg,
		sd:           sd,
		targets:      s.GaugeVec("shardwise_allocator_discovery_targets", "Targets per job after the relabel filter.", "job_name"),
		passDuration: s.Histogram("shardwise_allocator_discovery_pass_duration_seconds", "Time to turn one discovery update into targets.", prometheus.ExponentialBuckets(0.0005, 4, 9)),
		updates:      s.Counter("shardwise_allocator_discovery_updates_total", "Updates sent to the allocator."),
		jobPending: s.GaugeVec("shardwise_allocator_discovery_job_pending",
			"1 for a job whose service discovery providers have not all reported yet and that has no earlier targets; its targets are answered with 503 until they do.",
			"job_name"),
		configErrors: metrics.ConfigErrors(s),
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("register discovery metrics: %w", err)
	}
	return m, nil
}
