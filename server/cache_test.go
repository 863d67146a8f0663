package server

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// TestWholeJobBodyIsCached: /jobs/<job>/targets without collector_id is
// built once per snapshot and then served from the cache (it used to be
// rebuilt on every request from every collector's slice).
func TestWholeJobBodyIsCached(t *testing.T) {
	t.Parallel()
	a := newAllocator(t, 5, mkJobs(40, "a", "b"))
	s := newServer(t, a, nil)
	h := s.Handler()
	first := get(t, h, "/jobs/a/targets")
	require.Equal(t, http.StatusOK, first.Code)
	hits, misses := testutil.ToFloat64(s.metrics.cacheHits), testutil.ToFloat64(s.metrics.cacheMiss)

	second := get(t, h, "/jobs/a/targets")
	require.Equal(t, first.Body.String(), second.Body.String())
	require.Equal(t, first.Header().Get("ETag"), second.Header().Get("ETag"))
	require.InDelta(t, hits+1, testutil.ToFloat64(s.metrics.cacheHits), 0, "one cache hit: the whole body")
	require.InDelta(t, misses, testutil.ToFloat64(s.metrics.cacheMiss), 0)

	// A new snapshot that changes job a is served fresh.
	a.SetJobTargets(mkJobs(41, "a"))
	third := get(t, h, "/jobs/a/targets")
	require.NotEqual(t, first.Header().Get("ETag"), third.Header().Get("ETag"))
	require.Contains(t, third.Body.String(), "10.0.0.40:9100")
}

// TestServerTimeouts: every phase of a connection is bounded, so a slow or
// stalled client cannot hold a connection and its goroutine forever.
func TestServerTimeouts(t *testing.T) {
	t.Parallel()
	s := newServer(t, newAllocator(t, 1, nil), nil)
	srv := s.httpServer(nil, nil)
	require.Positive(t, srv.ReadHeaderTimeout, "read header")
	require.Positive(t, srv.ReadTimeout, "read")
	require.Positive(t, srv.WriteTimeout, "write")
	require.Positive(t, srv.IdleTimeout, "idle")
	require.Greater(t, srv.WriteTimeout, maxProfileDuration, "a bounded profile fits in the write timeout")
}

// TestCacheBoundedInBytes: the response cache holds at most its size in
// bytes, evicts the least recently used bodies first, counts evictions, and
// serves (without keeping) a body larger than the whole bound.
func TestCacheBoundedInBytes(t *testing.T) {
	t.Parallel()
	jobs := make([]string, 40)
	for i := range jobs {
		jobs[i] = fmt.Sprintf("job-%02d", i)
	}
	a := newAllocator(t, 2, mkJobs(20, jobs...))
	snap := a.Snapshot()
	one := get(t, newServer(t, a, nil).Handler(), "/jobs/job-00/targets?collector_id=collector-0").Body.Len()
	budget := int64(10 * (one + entryOverhead)) // about ten bodies
	s := newServer(t, a, nil, func(o *Options) { o.ResponseCacheBytes = budget })
	h := s.Handler()

	hot := "/jobs/job-00/targets?collector_id=collector-0"
	for _, job := range jobs {
		for _, col := range snap.Collectors() {
			require.Equal(t, http.StatusOK, get(t, h, "/jobs/"+job+"/targets?collector_id="+col).Code)
			get(t, h, hot) // kept recently used
			_, bytes := s.cache.stats()
			require.LessOrEqual(t, bytes, budget)
		}
	}
	require.Positive(t, testutil.ToFloat64(s.metrics.cacheEvictions))
	_, bytes := s.cache.stats()
	require.InDelta(t, float64(bytes), testutil.ToFloat64(s.metrics.cacheBytes), 0)

	hits := testutil.ToFloat64(s.metrics.cacheHits)
	get(t, h, hot)
	require.InDelta(t, hits+1, testutil.ToFloat64(s.metrics.cacheHits), 0, "the recently used body survived")
	misses := testutil.ToFloat64(s.metrics.cacheMiss)
	get(t, h, "/jobs/job-01/targets?collector_id=collector-0")
	require.InDelta(t, misses+1, testutil.ToFloat64(s.metrics.cacheMiss), 0, "an old body was evicted")

	// A body larger than the bound is served, not kept.
	tiny := newServer(t, a, nil, func(o *Options) { o.ResponseCacheBytes = 100 })
	w := get(t, tiny.Handler(), hot)
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, one, w.Body.Len())
	n, b := tiny.cache.stats()
	require.Zero(t, n)
	require.Zero(t, b)

	_, err := New(Options{Assignments: a, ResponseCacheBytes: -1})
	require.Error(t, err)
}

// TestUnknownJobNotCached: made-up job names are answered but do not fill
// the cache.
func TestUnknownJobNotCached(t *testing.T) {
	t.Parallel()
	a := newAllocator(t, 3, mkJobs(5, "a"))
	s := newServer(t, a, nil)
	for i := range 50 {
		w := get(t, s.Handler(), fmt.Sprintf("/jobs/nope-%d/targets", i))
		require.Equal(t, http.StatusOK, w.Code)
		require.Contains(t, w.Body.String(), `"collector-2":{"_link":`)
	}
	n, _ := s.cache.stats()
	require.Zero(t, n)
}

// TestStatusSummaryPerSnapshot: the status page derives its summary once
// per snapshot, not once per request.
func TestStatusSummaryPerSnapshot(t *testing.T) {
	t.Parallel()
	a := newAllocator(t, 3, mkJobs(30, "a", "b"))
	s := newServer(t, a, nil)
	h := s.Handler()
	first := get(t, h, "/")
	require.Equal(t, http.StatusOK, first.Code)
	for range 5 {
		require.Equal(t, first.Body.String(), get(t, h, "/").Body.String())
	}
	require.Equal(t, int64(1), s.page.builds.Load())
	require.Contains(t, get(t, h, "/?q=10.0.0.1").Body.String(), "10.0.0.1:9100")
	require.Equal(t, int64(1), s.page.builds.Load(), "a lookup reuses the summary")

	a.SetJobTargets(mkJobs(31, "a"))
	require.Contains(t, get(t, h, "/").Body.String(), "61", "the new snapshot's total")
	require.Equal(t, int64(2), s.page.builds.Load())
}

// TestSlowClientIsDisconnected: a client that never finishes its request
// header is cut off by the read-header timeout instead of holding the
// connection.
func TestSlowClientIsDisconnected(t *testing.T) {
	t.Parallel()
	s := newServer(t, newAllocator(t, 1, nil), nil)
	srv := s.httpServer(nil, nil)
	srv.ReadHeaderTimeout = 50 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })

	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("GET /livez HTTP/1.1\r\nHost: x\r\n")) // no final CRLF
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
	_, err = io.ReadAll(conn)
	require.NoError(t, err, "the server closed the connection (EOF) well before the client's own deadline")
}
