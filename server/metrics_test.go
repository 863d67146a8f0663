package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func TestMetricsAndPprof(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	a := newAllocator(t, 2, mkJobs(10, "a"))
	s := newServer(t, a, nil, func(o *Options) { o.Registerer = reg })
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
	require.True(t, strings.Contains(get(t, h, "/debug/pprof/").Body.String(), "goroutine"))
}
