package server

import (
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/allocation"
)

// barRE matches a collector's bar in the status page's SVG chart.
var barRE = regexp.MustCompile(`<rect class="bar" data-collector="([^"]+)" data-count="(\d+)"`)

// statusFixture is an allocator with a history of rebalances, an empty
// collector and an unassigned-free state.
func statusFixture(t testing.TB) *allocation.Allocator {
	t.Helper()
	a := newAllocator(t, 4, mkJobs(60, "serviceMonitor/ns/app/0", "static job", "<script>alert(1)</script>"))
	a.SetCollectors(mkCollectors(5)) // a join: moved vs minimum
	a.SetCollectors(mkCollectors(3)) // two leave
	return a
}

func TestStatusPage(t *testing.T) {
	t.Parallel()
	a := statusFixture(t)
	h := newServer(t, a, &fakeConfigs{ready: true}).Handler()

	w := get(t, h, "/")
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
	page := w.Body.String()
	bars := barRE.FindAllStringSubmatch(page, -1)
	require.Len(t, bars, 3)
	snap := a.Snapshot()
	for i, c := range snap.Collectors() {
		require.Equal(t, c, bars[i][1])
		require.Equal(t, snap.Loads()[i], mustAtoi(t, bars[i][2]))
	}
	require.NotContains(t, page, "<script>alert(1)</script>", "job names are escaped")
	require.Contains(t, page, `href="/jobs/serviceMonitor%2Fns%2Fapp%2F0/targets"`)
	require.Contains(t, page, "Recent rebalances")
	require.GreaterOrEqual(t, strings.Count(page, "<tr><td class=\"n\">"), 3, "one row per rebalance")
	require.NotContains(t, page, "http://", "no external assets")
	require.NotContains(t, page, "https://")

	// Lookup by address and by job.
	addr := snap.Slice(snap.Collectors()[1], "static job").Targets[0].Address
	w = get(t, h, "/?q="+url.QueryEscape(addr))
	require.Contains(t, w.Body.String(), `<table id="hits">`)
	require.Contains(t, w.Body.String(), "<td>"+snap.Collectors()[1]+"</td>")
	w = get(t, h, "/?q="+url.QueryEscape("static job"))
	require.Equal(t, 60, strings.Count(w.Body.String(), "<td>static job</td>"))
	w = get(t, h, "/?q=nothing-like-this")
	require.Contains(t, w.Body.String(), `id="nohits"`)
}

// TestStatusLookupBounded: lookups beyond maxLookups at once answer 429,
// and an overlong query 400, while the page itself keeps being served.
func TestStatusLookupBounded(t *testing.T) {
	t.Parallel()
	a := statusFixture(t)
	srv := newServer(t, a, &fakeConfigs{ready: true})
	h := srv.Handler()
	for range maxLookups {
		srv.lookups <- struct{}{} // lookups in progress
	}
	w := get(t, h, "/?q=static")
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Contains(t, w.Body.String(), "target lookups are running")
	require.Equal(t, http.StatusOK, get(t, h, "/").Code, "the page without a lookup is served")
	<-srv.lookups
	require.Equal(t, http.StatusOK, get(t, h, "/?q=static").Code)
	require.Equal(t, http.StatusBadRequest, get(t, h, "/?q="+strings.Repeat("x", maxQueryBytes+1)).Code)
}

func TestStatusPageEmpty(t *testing.T) {
	t.Parallel()
	a, err := allocation.New(allocation.Options{})
	require.NoError(t, err)
	w := get(t, newServer(t, a, &fakeConfigs{}).Handler(), "/")
	require.Equal(t, http.StatusOK, w.Code)
	require.Contains(t, w.Body.String(), "No collectors.")
	require.Contains(t, w.Body.String(), "scrape configs not ready yet")
}

func TestStatusPageLinksWork(t *testing.T) {
	t.Parallel()
	a := statusFixture(t)
	h := newServer(t, a, nil).Handler()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	t.Cleanup(ts.Client().CloseIdleConnections)
	page := get(t, h, "/").Body.String()
	for _, m := range regexp.MustCompile(`href="(/jobs/[^"]+)"`).FindAllStringSubmatch(page, -1) {
		resp, err := ts.Client().Get(ts.URL + html.UnescapeString(m[1])) // as a browser reads the attribute
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, m[1])
	}
}

func mustAtoi(t testing.TB, s string) int {
	t.Helper()
	n := 0
	for _, r := range s {
		require.True(t, r >= '0' && r <= '9', s)
		n = n*10 + int(r-'0')
	}
	return n
}
