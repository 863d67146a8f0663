package allocator

import (
	"github.com/prometheus/client_golang/prometheus"
)

// handoffCollector reports the handoff in force at each scrape.
type handoffCollector struct {
	st                                     *state
	lingering, moves, released, overlapSec *prometheus.Desc
}

func newHandoffCollector(st *state) *handoffCollector {
	return &handoffCollector{
		st: st,
		lingering: prometheus.NewDesc("shardwise_allocator_handoff_lingering_targets",
			"Targets served to their previous collector as well as to their new one, until the new one polls.", nil, nil),
		moves: prometheus.NewDesc("shardwise_allocator_handoff_moves_total",
			"Targets that changed collector while the previous one stayed, since the handoff in force started.", nil, nil),
		released: prometheus.NewDesc("shardwise_allocator_handoff_released_total",
			"Previous collectors released from a moved target, by what released them (poll: the new collector polled; timeout: the bound passed).", []string{"reason"}, nil),
		overlapSec: prometheus.NewDesc("shardwise_allocator_handoff_overlap_seconds_total",
			"Sum over released targets of how long each was served to two collectors.", nil, nil),
	}
}

func (c *handoffCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lingering
	ch <- c.moves
	ch <- c.released
	ch <- c.overlapSec
}

func (c *handoffCollector) Collect(ch chan<- prometheus.Metric) {
	h := c.st.handoff.Load()
	if h == nil {
		return
	}
	s := h.Stats()
	ch <- prometheus.MustNewConstMetric(c.lingering, prometheus.GaugeValue, float64(s.Lingering))
	ch <- prometheus.MustNewConstMetric(c.moves, prometheus.CounterValue, float64(s.Moves))
	ch <- prometheus.MustNewConstMetric(c.released, prometheus.CounterValue, float64(s.ReleasedByPoll), "poll")
	ch <- prometheus.MustNewConstMetric(c.released, prometheus.CounterValue, float64(s.ReleasedByTimeout), "timeout")
	ch <- prometheus.MustNewConstMetric(c.overlapSec, prometheus.CounterValue, s.OverlapSeconds)
}
