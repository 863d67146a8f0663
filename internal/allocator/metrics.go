package allocator

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/internal/metricset"
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
	s := metricset.New(reg)
	m := &metrics{
		targets:    s.GaugeVec("shardwise_allocator_targets", "Targets assigned to each collector.", "collector"),
		collectors: s.Gauge("shardwise_allocator_collectors", "Collectors that receive targets."),
		unassigned: s.Gauge("shardwise_allocator_targets_unassigned", "Targets no collector holds (no collectors, or per-node without a collector on the node)."),
		moved:      s.Counter("shardwise_allocator_rebalance_moved_targets_total", "Targets that changed collector in rebalances."),
		minimum:    s.Counter("shardwise_allocator_rebalance_min_targets_total", "The least number of moves the rebalances required; compare with the moved total."),
		duration: s.Histogram("shardwise_allocator_allocation_duration_seconds", "Time to assign targets after a change.",
			prometheus.ExponentialBuckets(0.0001, 4, 10)),
		balance:         s.Gauge("shardwise_allocator_balance", "Busiest collector's load over the mean load."),
		reloads:         s.CounterVec("shardwise_allocator_config_reloads_total", "Config file reloads by result (success, failure).", "result"),
		reloadTimestamp: s.Gauge("shardwise_allocator_config_last_reload_success_timestamp_seconds", "When the config file was last loaded successfully."),
		learned: s.Gauge("shardwise_allocator_learned_weights",
			"Targets (job and instance) with a weight learned from the samples the collectors scraped; 0 without weights.query_url or once the API has failed for three intervals."),
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("register allocator metrics: %w", err)
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
