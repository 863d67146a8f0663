package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/shardwise/shardwise/allocation"
)

// discardWriter is a reusable http.ResponseWriter that keeps the status and
// counts the body bytes.
type discardWriter struct {
	header http.Header
	code   int
	n      int
}

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
func (w *discardWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// benchTargets returns targets with realistic discovered labels (an
// EndpointSlice-discovered pod), spread round-robin over jobs.
func benchTargets(n, jobs int) map[string][]*allocation.Target {
	out := make(map[string][]*allocation.Target, jobs)
	for i := range n {
		job := "serviceMonitor/ns-" + strconv.Itoa(i%jobs) + "/app/0"
		addr := fmt.Sprintf("10.%d.%d.%d:8080", i>>16&255, i>>8&255, i&255)
		out[job] = append(out[job], &allocation.Target{
			Job:     job,
			Hash:    xxhash.Sum64String(job + "\xff" + addr),
			Address: addr,
			Labels: discovered(
				"__address__", addr,
				"__meta_kubernetes_namespace", "ns-"+strconv.Itoa(i%jobs),
				"__meta_kubernetes_pod_name", "app-"+strconv.Itoa(i),
				"__meta_kubernetes_pod_node_name", "node-"+strconv.Itoa(i%50),
				"__meta_kubernetes_endpointslice_name", "app-abcde",
				"__meta_kubernetes_endpointslice_port_name", "metrics",
				"__scheme__", "http",
				"__metrics_path__", "/metrics",
				"job", job,
			),
		})
	}
	return out
}

// BenchmarkJobTargets measures the http_sd endpoint the collectors poll:
// GET /jobs/<job>/targets?collector_id=<collector> at 100k targets, 100
// jobs and 10 collectors, through the full gin handler chain (metrics,
// recovery, routing, unescaping), with the response cache warm.
func BenchmarkJobTargets(b *testing.B) {
	a, err := allocation.New(allocation.Options{})
	if err != nil {
		b.Fatal(err)
	}
	a.SetCollectors(mkCollectors(10))
	a.SetJobTargets(benchTargets(100_000, 100))
	s, err := New(Options{Assignments: a})
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	job := "serviceMonitor/ns-42/app/0"
	r := httptest.NewRequestWithContext(context.Background(), http.MethodGet,
		"/jobs/serviceMonitor%2Fns-42%2Fapp%2F0/targets?collector_id=collector-3", nil)
	w := &discardWriter{header: http.Header{}}
	h.ServeHTTP(w, r) // warm the cache
	sl := a.Snapshot().Slice("collector-3", job)
	if w.code != http.StatusOK || sl == nil || w.n < 100*len(sl.Targets) {
		b.Fatalf("warm-up: status %d, %d bytes", w.code, w.n)
	}
	size := w.n
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w.n = 0
		h.ServeHTTP(w, r)
	}
	b.ReportMetric(float64(size), "B/response")
	b.ReportMetric(float64(len(sl.Targets)), "targets/response")
}

// BenchmarkJobTargetsRebuild measures serializing one (collector, job)
// slice, the cost paid once per changed slice.
func BenchmarkJobTargetsRebuild(b *testing.B) {
	a, err := allocation.New(allocation.Options{})
	if err != nil {
		b.Fatal(err)
	}
	a.SetCollectors(mkCollectors(10))
	a.SetJobTargets(benchTargets(100_000, 100))
	sl := a.Snapshot().Slice("collector-3", "serviceMonitor/ns-42/app/0")
	b.ReportAllocs()
	for b.Loop() {
		_ = newBody(appendSlice(make([]byte, 0, 256*len(sl.Targets)), sl))
	}
	b.ReportMetric(float64(len(sl.Targets)), "targets/response")
}

// BenchmarkJobTargetsAtScale serves http_sd at 1,000 collectors × 200 jobs
// (200k targets, about one per (collector, job)), through the full handler
// chain:
//   - warm: /jobs/<job>/targets?collector_id= with the body cached;
//   - cold: the same request with an empty cache (serialization included);
//   - whole-job-warm: /jobs/<job>/targets without collector_id, cached;
//   - whole-job-rebuilt: building that object, as every request did before;
//   - fill: every (collector, job) pair requested once, reporting the bytes
//     the cache then holds (cache-B) and per entry (B/entry).
func BenchmarkJobTargetsAtScale(b *testing.B) {
	const collectors, jobs = 1000, 200
	a, err := allocation.New(allocation.Options{})
	if err != nil {
		b.Fatal(err)
	}
	a.SetCollectors(mkCollectors(collectors))
	a.SetJobTargets(benchTargets(collectors*jobs, jobs))
	snap := a.Snapshot()
	const job = "serviceMonitor/ns-42/app/0"
	col := ""
	for _, c := range snap.Collectors() {
		if sl := snap.Slice(c, job); sl != nil && len(sl.Targets) > 0 {
			col = c
			break
		}
	}
	path := "/jobs/" + url.QueryEscape(job) + "/targets"
	one := httptest.NewRequestWithContext(context.Background(), http.MethodGet, path+"?collector_id="+col, nil)
	whole := httptest.NewRequestWithContext(context.Background(), http.MethodGet, path, nil)
	newSrv := func(b *testing.B) *Server {
		s, err := New(Options{Assignments: a})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	serve := func(b *testing.B, h http.Handler, r *http.Request) int {
		w := &discardWriter{header: http.Header{}}
		h.ServeHTTP(w, r)
		if w.code != http.StatusOK {
			b.Fatalf("status %d", w.code)
		}
		return w.n
	}

	b.Run("warm", func(b *testing.B) {
		s := newSrv(b)
		h := s.Handler()
		size := serve(b, h, one)
		b.ReportAllocs()
		for b.Loop() {
			serve(b, h, one)
		}
		b.ReportMetric(float64(size), "B/response")
	})
	b.Run("cold", func(b *testing.B) {
		s := newSrv(b)
		h := s.Handler()
		b.ReportAllocs()
		for b.Loop() {
			s.cache = newBodyCache(DefaultResponseCacheBytes, s.metrics)
			serve(b, h, one)
		}
	})
	b.Run("whole-job-warm", func(b *testing.B) {
		s := newSrv(b)
		h := s.Handler()
		size := serve(b, h, whole)
		b.ReportAllocs()
		for b.Loop() {
			serve(b, h, whole)
		}
		b.ReportMetric(float64(size), "B/response")
	})
	b.Run("whole-job-rebuilt", func(b *testing.B) {
		// What every request without collector_id cost before it was
		// cached: the object rebuilt from the (warm) per-collector bodies.
		s := newSrv(b)
		serve(b, s.Handler(), whole)
		b.ReportAllocs()
		for b.Loop() {
			_ = newBody(s.appendCollectors(nil, snap, job))
		}
	})
	b.Run("fill", func(b *testing.B) {
		reqs := make([]*http.Request, 0, collectors*jobs)
		for _, j := range snap.Jobs() {
			for _, c := range snap.Collectors() {
				reqs = append(reqs, httptest.NewRequestWithContext(context.Background(), http.MethodGet,
					"/jobs/"+url.QueryEscape(j)+"/targets?collector_id="+c, nil))
			}
		}
		var entries int
		var held int64
		for b.Loop() {
			s := newSrv(b)
			h := s.Handler()
			for _, r := range reqs {
				serve(b, h, r)
			}
			entries, held = s.cache.stats()
		}
		b.ReportMetric(float64(held), "cache-B")
		b.ReportMetric(float64(held)/float64(max(1, entries)), "B/entry")
		b.ReportMetric(float64(entries), "entries")
	})
}
