package metricset_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/internal/metricset"
	"github.com/shardwise/shardwise/internal/metricset/metricsettest"
)

func TestSetRegistersEveryMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := metricset.New(reg)
	g := s.Gauge("demo_items", "Items.")
	c := s.CounterVec("demo_events_total", "Events by kind.", "kind")
	h := s.Histogram("demo_duration_seconds", "Durations.", []float64{1})
	require.NoError(t, s.Err())
	g.Set(3)
	c.WithLabelValues("a").Inc()
	h.Observe(0.5)
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	require.Equal(t, 3, n)
}

// A set that cannot register one metric leaves nothing of its own in the
// registry, and what it handed out still works.
func TestSetFailsWhole(t *testing.T) {
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(prometheus.NewCounter(prometheus.CounterOpts{Name: "demo_taken_total", Help: "Taken."})))
	s := metricset.New(reg)
	g := s.Gauge("demo_items", "Items.")
	s.Counter("demo_taken_total", "Taken again.")
	after := s.GaugeVec("demo_after", "Declared after the failure.", "x")
	require.Error(t, s.Err())
	g.Set(1)
	after.WithLabelValues("y").Set(1)
	names, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, names, 1)
	require.Equal(t, "demo_taken_total", names[0].GetName(), "only what was there before")
	// The freed name can be declared again, by a new set.
	s2 := metricset.New(reg)
	s2.Gauge("demo_items", "Items.")
	require.NoError(t, s2.Err())
}

// Two components declaring the same shared metric get one collector; a
// failed set leaves a shared metric registered.
func TestShared(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := metricset.New(reg)
	fromA := a.Shared().CounterVec("demo_errors_total", "Errors by source.", "source")
	require.NoError(t, a.Err())
	b := metricset.New(reg)
	fromB := b.Shared().CounterVec("demo_errors_total", "Errors by source.", "source")
	b.Gauge("demo_items", "Items.")
	require.NoError(t, b.Err())
	fromB.WithLabelValues("b").Inc()
	require.InDelta(t, 1, testutil.ToFloat64(fromA.WithLabelValues("b")), 0, "one collector")

	c := metricset.New(reg)
	c.Shared().CounterVec("demo_errors_total", "Errors by source.", "source")
	c.Gauge("demo_items", "Items.") // b holds it
	require.Error(t, c.Err())
	n, err := testutil.GatherAndCount(reg, "demo_errors_total")
	require.NoError(t, err)
	require.Equal(t, 1, n, "the shared metric stays")

	// A shared name declared with another type is an error, not a panic.
	d := metricset.New(reg)
	d.Shared().GaugeVec("demo_errors_total", "Errors by source.", "source")
	require.Error(t, d.Err())
}

// The lint sees label vectors that never had a value, and finds what
// promlint finds on a /metrics page.
func TestLint(t *testing.T) {
	reg := metricsettest.NewRegistry()
	s := metricset.New(reg)
	s.CounterVec("demo_events_total", "Events by kind.", "kind")
	s.HistogramVec("demo_duration_seconds", "Durations.", []float64{1}, "route")
	require.NoError(t, s.Err())
	require.Equal(t, []string{"demo_events_total", "demo_duration_seconds"}, reg.Declared())
	require.NoError(t, reg.Lint())

	s.CounterVec("demo_requests", "Requests, a counter without _total.", "code")
	s.Gauge("demo_latency_milliseconds", "")
	err := reg.Lint()
	require.ErrorContains(t, err, `demo_requests: counter metrics should have "_total" suffix`)
	require.ErrorContains(t, err, "demo_latency_milliseconds: no help text")
	require.ErrorContains(t, err, "demo_latency_milliseconds: use base unit")
}
