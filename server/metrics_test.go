package server

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/internal/metricset/metricsettest"
)

func TestMetricsAndPprof(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	a := newAllocator(t, 2, mkJobs(10, "a"))
	s := newServer(t, a, nil, func(o *Options) { o.Registerer = reg; o.EnablePprof = true })
	h := s.Handler()
	get(t, h, "/jobs/a/targets?collector_id=collector-0")
	get(t, h, "/jobs/a/targets?collector_id=collector-0")
	get(t, h, "/jobs/a/targets?collector_id=%zz")
	get(t, h, "/nope")

	w := get(t, h, "/metrics")
	require.Equal(t, http.StatusOK, w.Code)
	body := w.Body.String()
	for _, want := range []string{
		`shardwise_allocator_http_request_duration_seconds_count{code="200",route="/jobs/:job/targets"} 2`,
		`shardwise_allocator_http_request_duration_seconds_count{code="400",route="/jobs/:job/targets"} 1`,
		`shardwise_allocator_http_request_duration_seconds_count{code="404",route="unmatched"} 1`,
		`shardwise_allocator_http_target_cache_hits_total 1`,
		`shardwise_allocator_http_target_cache_misses_total 1`,
		`shardwise_allocator_http_target_cache_entries 1`,
		`shardwise_allocator_http_target_cache_evictions_total 0`,
	} {
		require.Contains(t, body, want)
	}
	require.NotContains(t, body, "go_goroutines", "only the private registry is served")
	require.Equal(t, 0.0, testutil.ToFloat64(s.metrics.panics))

	// Two servers on one registry would report the same series.
	_, err := New(Options{Assignments: a, Registerer: reg})
	require.Error(t, err)

	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap?debug=1", "/debug/pprof/goroutine?debug=1"} {
		w := get(t, h, path)
		require.Equal(t, http.StatusOK, w.Code, path)
		require.NotEmpty(t, w.Body.String(), path)
	}
	require.Contains(t, get(t, h, "/debug/pprof/").Body.String(), "goroutine")
}

// TestPprofOptIn: pprof is off unless enabled, and enabled it refuses
// unbounded profile durations.
func TestPprofOptIn(t *testing.T) {
	t.Parallel()
	a := newAllocator(t, 1, mkJobs(1, "a"))
	off := newServer(t, a, nil).Handler()
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1", "/debug/pprof/cmdline"} {
		require.Equal(t, http.StatusNotFound, get(t, off, path).Code, path)
	}

	on := newServer(t, a, nil, func(o *Options) { o.EnablePprof = true }).Handler()
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/debug/pprof/", http.StatusOK},
		{"/debug/pprof/heap?debug=1", http.StatusOK},
		{"/debug/pprof/profile?seconds=61", http.StatusBadRequest},
		{"/debug/pprof/trace?seconds=3600", http.StatusBadRequest},
		{"/debug/pprof/heap?seconds=1e9", http.StatusBadRequest},
		{"/debug/pprof/profile?seconds=-1", http.StatusBadRequest},
		{"/debug/pprof/profile?seconds=soon", http.StatusBadRequest},
		{"/debug/pprof/trace?seconds=0.05", http.StatusOK},
	} {
		w := get(t, on, tc.path)
		require.Equal(t, tc.code, w.Code, "%s: %s", tc.path, w.Body.String())
		if tc.code == http.StatusBadRequest {
			require.Contains(t, w.Body.String(), "seconds must be")
		}
	}
}

// TestMetricsLint: the serving metrics pass promlint, label vectors
// included, and a failed registration leaves the registry as it was.
func TestMetricsLint(t *testing.T) {
	t.Parallel()
	metricsettest.Require(t, 10, metricsettest.Of(newMetrics))
	other := prometheus.NewRegistry()
	require.NoError(t, other.Register(prometheus.NewCounter(prometheus.CounterOpts{Name: "shardwise_allocator_tls_reloads_total", Help: "Taken."})))
	_, err := newMetrics(other)
	require.Error(t, err)
	n, err := testutil.GatherAndCount(other)
	require.NoError(t, err)
	require.Equal(t, 1, n, "nothing of the failed set stays registered")
}
