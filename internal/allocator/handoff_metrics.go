package allocator

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardwise/shardwise/allocation"
)

// handoffMetrics registers the metrics of the handoff in force, read at each
// scrape (zero while the handoff is off).
func handoffMetrics(reg prometheus.Registerer, st *state) error {
	stat := func(f func(allocation.HandoffStats) float64) func() float64 {
		return func() float64 {
			h := st.handoff.Load()
			if h == nil {
				return 0
			}
			return f(h.Stats())
		}
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shardwise_allocator_handoff_lingering_targets",
			Help: "Targets served to their previous collector as well as to their new one, until the new one has them.",
		}, stat(func(s allocation.HandoffStats) float64 { return float64(s.Lingering) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "shardwise_allocator_handoff_moves_total",
			Help: "Targets that changed collector while the previous one stayed (or drained), since the handoff in force started.",
		}, stat(func(s allocation.HandoffStats) float64 { return float64(s.Moves) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "shardwise_allocator_handoff_released_total",
			Help:        "Previous collectors released from a moved target, by what released them (poll: the new collector had it; timeout: the bound passed).",
			ConstLabels: prometheus.Labels{"reason": "poll"},
		}, stat(func(s allocation.HandoffStats) float64 { return float64(s.ReleasedByPoll) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "shardwise_allocator_handoff_released_total",
			Help:        "Previous collectors released from a moved target, by what released them (poll: the new collector had it; timeout: the bound passed).",
			ConstLabels: prometheus.Labels{"reason": "timeout"},
		}, stat(func(s allocation.HandoffStats) float64 { return float64(s.ReleasedByTimeout) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "shardwise_allocator_handoff_overlap_seconds_total",
			Help: "Sum over released targets of how long each was served to two collectors.",
		}, stat(func(s allocation.HandoffStats) float64 { return s.OverlapSeconds })),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
