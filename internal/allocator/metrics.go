package allocator

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardwise/shardwise/allocation"
)

// metrics are the allocator's own metrics; discovery and server register theirs.
type metrics struct {
	targets         *prometheus.GaugeVec
	collectors      prometheus.Gauge
	unassigned      prometheus.Gauge
	moved           prometheus.Counter
	minimum         prometheus.Counter
	duration        prometheus.Histogram
	balance         prometheus.Gauge
	reloads         *prometheus.CounterVec
	reloadTimestamp prometheus.Gauge
	learned         prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		targets: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardwise_allocator_targets",
			Help: "Targets assigned to each collector.",
		}, []string{"collector"}),
		collectors: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardwise_allocator_collectors",
			Help: "Collectors that receive targets.",
		}),
		unassigned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardwise_allocator_targets_unassigned",
			Help: "Targets no collector holds (no collectors, or per-node without a collector on the node).",
		}),
		moved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardwise_allocator_rebalance_moved_targets_total",
			Help: "Targets that changed collector in rebalances.",
		}),
		minimum: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardwise_allocator_rebalance_min_targets_total",
			Help: "The least number of moves the rebalances required; compare with the moved total.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "shardwise_allocator_allocation_duration_seconds",
			Help:    "Time to assign targets after a change.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}),
		balance: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardwise_allocator_balance",
			Help: "Busiest collector's load over the mean load.",
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardwise_allocator_config_reloads_total",
			Help: "Config file reloads by result (success, failure).",
		}, []string{"result"}),
		reloadTimestamp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardwise_allocator_config_last_reload_success_timestamp_seconds",
			Help: "When the config file was last loaded successfully.",
		}),
		learned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardwise_allocator_learned_weights",
			Help: "Targets (job and instance) with a weight learned from the samples the collectors scraped; 0 without weights.query_url or once the API has failed for three intervals.",
		}),
	}
	for _, c := range []prometheus.Collector{m.targets, m.collectors, m.unassigned, m.moved, m.minimum, m.duration, m.balance, m.reloads, m.reloadTimestamp, m.learned} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register allocator metrics: %w", err)
		}
	}
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("failure")
	return m, nil
}

// observe records one rebalance and the state it left.
func (m *metrics) observe(res allocation.Result, s *allocation.Snapshot) {
	m.moved.Add(float64(res.Moved))
	m.minimum.Add(float64(res.Min))
	m.duration.Observe(res.Duration.Seconds())
	m.collectors.Set(float64(res.Collectors))
	m.unassigned.Set(float64(res.Unassigned))
	m.balance.Set(s.Balance())
	m.targets.Reset()
	for i, l := range s.Loads() {
		m.targets.WithLabelValues(s.Collectors()[i]).Set(float64(l))
	}
}
