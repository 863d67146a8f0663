package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/shardwise/shardwise/allocation"
)

// sdEntry is one element of an http_sd response.
type sdEntry struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

type collectorEntry struct {
	Link    string    `json:"_link"`
	Targets []sdEntry `json:"targets"`
}

// Job names that must survive url.QueryEscape in the path.
var trickyJobs = []string{
	"serviceMonitor/ns/app/0",
	"podMonitor/monitoring/kube state/1",
	"static+job",
	"static job",
	"50%",
	"ünïcode/ジョブ",
	"node",
}

func TestJobTargetsRoundTrip(t *testing.T) {
	t.Parallel()
	a := newAllocator(t, 3, mkJobs(30, trickyJobs...))
	s := newServer(t, a, nil)
	// A real listener, so the path goes through net/http's parsing as a
	// collector's request would.
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(ts.Client().CloseIdleConnections)

	snap := a.Snapshot()
	for _, job := range trickyJobs {
		t.Run(job, func(t *testing.T) {
			t.Parallel()
			seen := map[string]bool{}
			for _, col := range snap.Collectors() {
				resp, err := ts.Client().Get(ts.URL + "/jobs/" + url.QueryEscape(job) + "/targets?collector_id=" + url.QueryEscape(col))
				require.NoError(t, err)
				body, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())
				require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
				require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
				require.NotEmpty(t, resp.Header.Get("ETag"))

				var got []sdEntry
				require.NoError(t, json.Unmarshal(body, &got))
				sl := snap.Slice(col, job)
				require.NotNil(t, sl, "every collector holds some of 30 targets")
				require.Len(t, got, len(sl.Targets))
				for i, tg := range sl.Targets {
					require.Equal(t, []string{tg.Address}, got[i].Targets, "stable order")
					require.Equal(t, tg.Labels.Map(), got[i].Labels)
					require.Equal(t, job, got[i].Labels["job"])
					require.False(t, seen[tg.Address], "a target is served to one collector")
					seen[tg.Address] = true
				}
			}
			require.Len(t, seen, 30, "every target is served")
		})
	}
}

func TestJobTargetsEdgeCases(t *testing.T) {
	t.Parallel()
	a := newAllocator(t, 3, mkJobs(20, "serviceMonitor/ns/app/0", "one"))
	// "one" keeps a single target: two collectors hold nothing of it.
	a.SetJobTargets(map[string][]*allocation.Target{"one": {mkTarget("one", "10.9.9.9:80")}})
	s := newServer(t, a, nil)
	h := s.Handler()
	holder := ""
	for _, c := range a.Snapshot().Collectors() {
		if a.Snapshot().Slice(c, "one") != nil {
			holder = c
		}
	}
	require.NotEmpty(t, holder)

	tests := []struct {
		name   string
		target string
		code   int
		body   string // exact body, when set
		check  func(t *testing.T, body []byte)
	}{
		{name: "unknown job", target: "/jobs/nope/targets?collector_id=collector-0", code: 200, body: "[]"},
		{name: "unknown collector", target: "/jobs/one/targets?collector_id=collector-9", code: 200, body: "[]"},
		{name: "empty collector id", target: "/jobs/one/targets?collector_id=", code: 200, body: "[]"},
		{name: "collector without targets of the job", target: "/jobs/one/targets?collector_id=" + otherThan(holder), code: 200, body: "[]"},
		{name: "unescaped slash is another route", target: "/jobs/serviceMonitor/ns/app/0/targets?collector_id=collector-0", code: 404},
		{name: "bad escape in query", target: "/jobs/one/targets?collector_id=%zz", code: 400},
		{name: "repeated collector_id", target: "/jobs/one/targets?collector_id=a&collector_id=b", code: 400},
		{name: "semicolon in query", target: "/jobs/one/targets?collector_id=a;b", code: 400},
		{name: "other parameters are ignored", target: "/jobs/one/targets?x=1&collector_id=" + holder, code: 200, check: func(t *testing.T, body []byte) {
			var got []sdEntry
			require.NoError(t, json.Unmarshal(body, &got))
			require.Equal(t, []sdEntry{{Targets: []string{"10.9.9.9:80"}, Labels: mkTarget("one", "10.9.9.9:80").Labels.Map()}}, got)
		}},
		{name: "without collector_id every collector is listed", target: "/jobs/one/targets", code: 200, check: func(t *testing.T, body []byte) {
			var got map[string]collectorEntry
			require.NoError(t, json.Unmarshal(body, &got))
			require.Len(t, got, 3)
			for _, c := range a.Snapshot().Collectors() {
				e, ok := got[c]
				require.True(t, ok, c)
				require.Equal(t, "/jobs/one/targets?collector_id="+c, e.Link)
				require.NotNil(t, e.Targets, "an empty list, not null")
				if c == holder {
					require.Len(t, e.Targets, 1)
				} else {
					require.Empty(t, e.Targets)
				}
			}
		}},
		{name: "without collector_id, unknown job", target: "/jobs/nope/targets", code: 200, check: func(t *testing.T, body []byte) {
			require.JSONEq(t, `{"collector-0":{"_link":"/jobs/nope/targets?collector_id=collector-0","targets":[]},
				"collector-1":{"_link":"/jobs/nope/targets?collector_id=collector-1","targets":[]},
				"collector-2":{"_link":"/jobs/nope/targets?collector_id=collector-2","targets":[]}}`, string(body))
		}},
		{name: "without collector_id, escaped job", target: "/jobs/serviceMonitor%2Fns%2Fapp%2F0/targets", code: 200, check: func(t *testing.T, body []byte) {
			var got map[string]collectorEntry
			require.NoError(t, json.Unmarshal(body, &got))
			n := 0
			for c, e := range got {
				require.Equal(t, "/jobs/serviceMonitor%2Fns%2Fapp%2F0/targets?collector_id="+c, e.Link)
				n += len(e.Targets)
			}
			require.Equal(t, 20, n)
		}},
		{name: "jobs", target: "/jobs", code: 200, check: func(t *testing.T, body []byte) {
			require.JSONEq(t, `{"one":{"_link":"/jobs/one/targets"},
				"serviceMonitor/ns/app/0":{"_link":"/jobs/serviceMonitor%2Fns%2Fapp%2F0/targets"}}`, string(body))
		}},
		{name: "no such route", target: "/nope", code: 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := get(t, h, tc.target)
			require.Equal(t, tc.code, w.Code, w.Body.String())
			require.Equal(t, "application/json", w.Header().Get("Content-Type"))
			if tc.code >= 400 {
				var e errorBody
				require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e))
				require.NotEmpty(t, e.Error)
				return
			}
			if tc.body != "" {
				require.Equal(t, tc.body, w.Body.String())
			}
			if tc.check != nil {
				tc.check(t, w.Body.Bytes())
			}
		})
	}
}

func otherThan(c string) string {
	for _, o := range []string{"collector-0", "collector-1", "collector-2"} {
		if o != c {
			return o
		}
	}
	return ""
}

func TestETag(t *testing.T) {
	t.Parallel()
	a := newAllocator(t, 2, mkJobs(10, "serviceMonitor/ns/app/0"))
	h := newServer(t, a, &fakeConfigs{ready: true}).Handler()
	for _, target := range []string{
		"/jobs/serviceMonitor%2Fns%2Fapp%2F0/targets?collector_id=collector-0",
		"/jobs/serviceMonitor%2Fns%2Fapp%2F0/targets?collector_id=nobody",
		"/jobs/serviceMonitor%2Fns%2Fapp%2F0/targets",
		"/jobs",
		"/scrape_configs",
	} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			first := get(t, h, target)
			require.Equal(t, http.StatusOK, first.Code)
			etag := first.Header().Get("ETag")
			require.True(t, strings.HasPrefix(etag, `"`) && strings.HasSuffix(etag, `"`), etag)
			require.Equal(t, etag, get(t, h, target).Header().Get("ETag"), "stable while nothing changes")

			for _, inm := range []string{etag, "W/" + etag, `"x", ` + etag, "*"} {
				w := get(t, h, target, "If-None-Match", inm)
				require.Equal(t, http.StatusNotModified, w.Code, inm)
				require.Empty(t, w.Body.Bytes())
				require.Equal(t, etag, w.Header().Get("ETag"))
			}
			w := get(t, h, target, "If-None-Match", `"stale"`)
			require.Equal(t, http.StatusOK, w.Code)
			require.Equal(t, first.Body.String(), w.Body.String())
		})
	}
}

func TestSliceCacheReuse(t *testing.T) {
	t.Parallel()
	a := newAllocator(t, 2, mkJobs(10, "a", "b"))
	s := newServer(t, a, nil)
	h := s.Handler()
	const target = "/jobs/a/targets?collector_id=collector-0"
	cached := func() *body {
		sl := a.Snapshot().Slice("collector-0", "a")
		require.NotNil(t, sl)
		s.cache.mu.RLock()
		defer s.cache.mu.RUnlock()
		if e := s.cache.entries[cacheKey{version: sl.Version}]; e != nil {
			return e.body
		}
		return nil
	}

	w1 := get(t, h, target)
	b1 := cached()
	require.NotNil(t, b1)
	require.Equal(t, string(b1.data), w1.Body.String())
	get(t, h, target)
	require.Same(t, b1, cached(), "same Version, same bytes object")

	// Another job changes: a new snapshot, but slice (collector-0, a) keeps
	// its Version and its cached bytes.
	gen := a.Snapshot().Generation()
	a.SetJobTargets(map[string][]*allocation.Target{"b": mkJobs(11, "b")["b"]})
	require.Greater(t, a.Snapshot().Generation(), gen)
	get(t, h, target)
	require.Same(t, b1, cached())

	// Job a changes: rebuilt.
	a.SetJobTargets(map[string][]*allocation.Target{"a": mkJobs(40, "a")["a"]})
	w2 := get(t, h, target)
	b2 := cached()
	require.NotSame(t, b1, b2)
	require.NotEqual(t, w1.Body.String(), w2.Body.String())
	require.NotEqual(t, w1.Header().Get("ETag"), w2.Header().Get("ETag"))
}

func TestSliceCacheSweepsDeadSlices(t *testing.T) {
	t.Parallel()
	a := newAllocator(t, 2, mkJobs(4, "a"))
	s := newServer(t, a, nil)
	h := s.Handler()
	for i := range 1500 {
		// Every round replaces the job's targets: new slices, new versions.
		a.SetJobTargets(map[string][]*allocation.Target{"a": mkJobs(4+i%7, "a")["a"]})
		for _, c := range []string{"collector-0", "collector-1"} {
			require.Equal(t, http.StatusOK, get(t, h, "/jobs/a/targets?collector_id="+c).Code)
		}
		n, _ := s.cache.stats()
		require.LessOrEqual(t, n, 2*2+1024+2, "slices no snapshot holds are swept")
	}
}

func TestConcurrentServingDuringRebalances(t *testing.T) {
	t.Parallel()
	a := newAllocator(t, 4, mkJobs(50, "a", "b/c"))
	h := newServer(t, a, nil).Handler()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				w := get(t, h, "/jobs/b%2Fc/targets?collector_id=collector-1")
				if w.Code != http.StatusOK || !json.Valid(w.Body.Bytes()) {
					t.Errorf("got %d %q", w.Code, w.Body.String())
					return
				}
			}
		})
	}
	for i := range 30 {
		a.SetCollectors(mkCollectors(3 + i%3))
		a.SetJobTargets(map[string][]*allocation.Target{"b/c": mkJobs(40+i, "b/c")["b/c"]})
	}
	close(stop)
	wg.Wait()
}

func TestPanicIsRecovered(t *testing.T) {
	t.Parallel()
	s := newServer(t, panicky{}, nil)
	for _, target := range []string{"/jobs/a/targets?collector_id=c", "/jobs", "/"} {
		w := get(t, s.Handler(), target)
		require.Equal(t, http.StatusInternalServerError, w.Code)
		require.JSONEq(t, `{"error":"internal error"}`, w.Body.String())
	}
}

func TestAppendString(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "plain", `q"uote\back`, "ctl\x00\x1f\n\r\t", "<html>&", "ünï\u2028\u2029", "bad\xffutf8"} {
		got := appendString(nil, in)
		want, err := json.Marshal(in)
		require.NoError(t, err)
		var a, b string
		require.NoError(t, json.Unmarshal(got, &a), string(got))
		require.NoError(t, json.Unmarshal(want, &b))
		require.Equal(t, b, a, "decodes like encoding/json's output")
	}
}

// TestAppendStringProperty checks random strings, special bytes at every
// offset of the eight-byte fast path included, against encoding/json.
func TestAppendStringProperty(t *testing.T) {
	t.Parallel()
	alphabet := []string{"a", "Z", "_", "0", " ", "~", "\"", "\\", "\x00", "\x1f", "\n", "\x7f", "\x80", "\xff", "é", "\u2028", "<"}
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.SampledFrom(alphabet), 0, 40).Draw(t, "parts")
		in := strings.Join(parts, "")
		got := appendString(nil, in)
		want, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var a, b string
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("%q: %v", got, err)
		}
		if err := json.Unmarshal(want, &b); err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Fatalf("%q encodes to %s, which decodes to %q; encoding/json's to %q", in, got, a, b)
		}
	})
}

func TestQueryParam(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw, value string
		ok, err    bool
	}{
		{raw: "", ok: false},
		{raw: "collector_id=c-1", value: "c-1", ok: true},
		{raw: "a=b&collector_id=c%2F1&", value: "c/1", ok: true},
		{raw: "collector%5Fid=x+y", value: "x y", ok: true},
		{raw: "collector_id", value: "", ok: true},
		{raw: "collector_id=a&collector_id=b", err: true},
		{raw: "collector_id=%zz", err: true},
		{raw: "x=%zz&collector_id=a", err: true},
		{raw: "a=1;collector_id=b", err: true},
	}
	for _, tc := range tests {
		v, ok, err := queryParam(tc.raw, "collector_id")
		if tc.err {
			require.Error(t, err, tc.raw)
			continue
		}
		require.NoError(t, err, tc.raw)
		require.Equal(t, tc.ok, ok, tc.raw)
		require.Equal(t, tc.value, v, tc.raw)
	}
}

// switchable is an Assignments whose allocator can be replaced, as the
// program does when the strategy changes.
type switchable struct {
	mu sync.Mutex // guards a
	a  *allocation.Allocator
}

func (s *switchable) Snapshot() *allocation.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.a.Snapshot()
}

func (s *switchable) set(a *allocation.Allocator) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.a = a
}

func TestSliceCacheAcrossAllocators(t *testing.T) {
	t.Parallel()
	// Two allocators built the same way: their slices' Versions are unique
	// in the process (they used to count per allocator, and the cache served
	// the first allocator's body for the second's slice of equal Version).
	first := newAllocator(t, 2, mkJobs(10, "a"))
	second := newAllocator(t, 2, map[string][]*allocation.Target{
		"a": {mkTarget("a", "192.0.2.1:1"), mkTarget("a", "192.0.2.2:1"), mkTarget("a", "192.0.2.3:1")},
		"b": {mkTarget("b", "192.0.2.9:1")},
	})
	require.Equal(t, first.Snapshot().Generation(), second.Snapshot().Generation())
	col := ""
	for _, c := range second.Snapshot().Collectors() {
		sl, other := second.Snapshot().Slice(c, "a"), first.Snapshot().Slice(c, "a")
		if sl != nil && other != nil {
			require.NotEqual(t, other.Version, sl.Version)
			col = c
		}
	}
	require.NotEmpty(t, col, "the fixture must give one collector targets of job a in both")

	src := &switchable{a: first}
	h := newServer(t, src, nil).Handler()
	require.JSONEq(t, `{"a":{"_link":"/jobs/a/targets"}}`, get(t, h, "/jobs").Body.String())
	target := "/jobs/a/targets?collector_id=" + col
	require.Contains(t, get(t, h, target).Body.String(), `"10.0.`)
	src.set(second)
	require.JSONEq(t, `{"a":{"_link":"/jobs/a/targets"},"b":{"_link":"/jobs/b/targets"}}`, get(t, h, "/jobs").Body.String())
	got := get(t, h, target).Body.String()
	require.NotContains(t, got, `"10.0.`)
	require.Contains(t, got, `"192.0.2.`)
}
