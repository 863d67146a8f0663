package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/gin-gonic/gin"
	"github.com/go-logr/logr"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardwise/shardwise/allocation"
)

func TestMain(m *testing.M) {
	// The test binary owns its process: quiet gin's debug printing as
	// cmd/allocator does.
	gin.SetMode(gin.ReleaseMode)
	// certwatcher (the HTTPS key pair) logs through controller-runtime's
	// logger, which complains if never set.
	ctrllog.SetLogger(logr.Discard())
	goleak.VerifyTestMain(m,
		// klog (linked in through the kubernetes SD used by the scrape
		// config fixtures) starts its flush daemon at init.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
	)
}

// fakeConfigs is a hand-written ScrapeConfigs.
type fakeConfigs struct {
	mu    sync.Mutex // guards m, ready and calls
	m     map[string]*promconfig.ScrapeConfig
	ready bool
	calls int
}

func (f *fakeConfigs) ScrapeConfigs() (map[string]*promconfig.ScrapeConfig, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.m, f.ready
}

func (f *fakeConfigs) set(m map[string]*promconfig.ScrapeConfig, ready bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m, f.ready = m, ready
}

// panicky is an Assignments whose snapshot read panics.
type panicky struct{}

func (panicky) Snapshot() *allocation.Snapshot { panic("boom") }

// mkTarget returns a target of job at addr with discovered labels.
func mkTarget(job, addr string, extra ...string) *allocation.Target {
	ls := append([]string{"__address__", addr, "job", job, "__meta_kubernetes_pod_name", "pod-" + addr}, extra...)
	return &allocation.Target{
		Job:     job,
		Hash:    xxhash.Sum64String(job + "\xff" + addr),
		Address: addr,
		Labels:  discovered(ls...),
	}
}

// mkJobs returns n targets per job.
func mkJobs(n int, jobs ...string) map[string][]*allocation.Target {
	out := make(map[string][]*allocation.Target, len(jobs))
	for j, job := range jobs {
		for i := range n {
			out[job] = append(out[job], mkTarget(job, fmt.Sprintf("10.%d.%d.%d:9100", j, i>>8&255, i&255)))
		}
	}
	return out
}

func mkCollectors(n int) []allocation.Collector {
	cs := make([]allocation.Collector, n)
	for i := range cs {
		cs[i] = allocation.Collector{Name: "collector-" + strconv.Itoa(i)}
	}
	return cs
}

// newAllocator returns a consistent-hashing allocator holding the targets.
func newAllocator(t testing.TB, collectors int, jobs map[string][]*allocation.Target) *allocation.Allocator {
	t.Helper()
	a, err := allocation.New(allocation.Options{})
	require.NoError(t, err)
	a.SetCollectors(mkCollectors(collectors))
	a.SetJobTargets(jobs)
	return a
}

// newServer returns a server over a and cfgs (nil allowed) with a private
// registry.
func newServer(t testing.TB, a Assignments, cfgs ScrapeConfigs, opts ...func(*Options)) *Server {
	t.Helper()
	o := Options{Assignments: a, ScrapeConfigs: cfgs}
	if cfgs == nil {
		o.ScrapeConfigs = nil
	}
	for _, f := range opts {
		f(&o)
	}
	s, err := New(o)
	require.NoError(t, err)
	return s
}

// get serves one GET through the handler.
func get(t testing.TB, h http.Handler, target string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequestWithContext(context.Background(), http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// testLogger writes to the test log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

var _ io.Writer = tWriter{}

func discovered(kv ...string) allocation.Discovered {
	return allocation.DiscoveredOf(labels.FromStrings(kv...))
}
