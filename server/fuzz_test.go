package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/allocation"
)

// FuzzHandler sends arbitrary request targets and entity tags to the whole
// handler: every response is a 2xx, 304 or 4xx (a recovered panic would be a
// 500), and every JSON body it sends is valid JSON.
func FuzzHandler(f *testing.F) {
	for _, seed := range []string{
		"/jobs", "/jobs/one/targets?collector_id=collector-0", "/jobs/serviceMonitor%2Fns%2Fapp%2F0/targets",
		"/jobs/one/targets?collector_id=%zz", "/jobs/one/targets?collector_id=a&collector_id=b",
		"/jobs/%ff%fe/targets?collector_id=\xff", "/scrape_configs", "/", "/livez", "/readyz", "/metrics",
		"/jobs//targets", "/jobs/one/targets?;", "/debug/pprof/",
	} {
		f.Add(seed, "")
	}
	f.Add("/jobs/one/targets?collector_id=collector-1", `"abc"`)
	a := newAllocator(f, 3, mkJobs(20, "serviceMonitor/ns/app/0", "one"))
	a.SetJobTargets(map[string][]*allocation.Target{"one": {mkTarget("one", "10.9.9.9:80", "ütf", "\xff\x00\"")}})
	s := newServer(f, a, nil)
	h := s.Handler()
	f.Fuzz(func(t *testing.T, target, etag string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || strings.HasPrefix(target, "/debug/") {
			return // net/http rejects it before any handler; pprof is not ours
		}
		r := &http.Request{Method: http.MethodGet, URL: u, RequestURI: target, Header: http.Header{}, Host: "allocator"}
		if etag != "" {
			r.Header.Set("If-None-Match", etag)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code >= 500 || w.Code < 200 {
			t.Fatalf("GET %q: status %d: %s", target, w.Code, w.Body.String())
		}
		if strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") && w.Body.Len() > 0 && !json.Valid(w.Body.Bytes()) {
			t.Fatalf("GET %q: invalid JSON: %q", target, w.Body.String())
		}
	})
}
