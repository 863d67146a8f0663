//go:build linux

package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/chromedp/chromedp"
	"github.com/gin-gonic/gin"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/server"
)

// chromiumPath is Debian's chromium, installed by `make browser` (a step of
// `make test`). The test does not install anything itself.
const chromiumPath = "/usr/bin/chromium"

func TestMain(m *testing.M) {
	// The test binary owns its process: quiet gin's debug printing as
	// cmd/allocator does.
	gin.SetMode(gin.ReleaseMode)
	os.Exit(m.Run())
}

// renderedBar is a bar of the chart as the browser laid it out.
type renderedBar struct {
	Collector string  `json:"collector"`
	Count     int     `json:"count"`
	Label     string  `json:"label"` // the count printed next to the bar
	Width     float64 `json:"width"` // rendered width in px
}

// noConfigs is a ScrapeConfigs with an empty, ready set.
type noConfigs struct{}

func (noConfigs) ScrapeConfigs() (map[string]*promconfig.ScrapeConfig, bool) { return nil, true }

// fixture is an allocator over three jobs of 60 targets each (one name
// needing escaping) with a history of rebalances: 4 collectors, a join to 5,
// two leaving, then 7.
func fixture(t *testing.T) *allocation.Allocator {
	t.Helper()
	a, err := allocation.New(allocation.Options{})
	require.NoError(t, err)
	jobs := map[string][]*allocation.Target{}
	for j, job := range []string{"serviceMonitor/ns/app/0", "static job", "<script>alert(1)</script>"} {
		for i := range 60 {
			addr := fmt.Sprintf("10.%d.%d.%d:9100", j, i>>8&255, i&255)
			jobs[job] = append(jobs[job], &allocation.Target{
				Job:     job,
				Hash:    xxhash.Sum64String(job + "\xff" + addr),
				Address: addr,
				Labels:  allocation.DiscoveredOf(labels.FromStrings("__address__", addr, "job", job, "__meta_kubernetes_pod_name", "pod-"+addr)),
			})
		}
	}
	for _, n := range []int{4, 5, 3, 7} {
		cs := make([]allocation.Collector, n)
		for i := range cs {
			cs[i] = allocation.Collector{Name: "collector-" + strconv.Itoa(i)}
		}
		a.SetCollectors(cs)
		if n == 4 {
			a.SetJobTargets(jobs)
		}
	}
	return a
}

// TestStatusPageInChromium loads the status page in headless Chromium and
// checks the rendered DOM against the API: one bar per collector whose
// count is the collector's targets as served by /jobs/<job>/targets, bars
// as wide as their counts in proportion, the balance figure, and a target
// lookup typed into the form that finds the target's collector. A
// screenshot is kept in bin/ for people to look at.
func TestStatusPageInChromium(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("SHARDWISE_REQUIRE_CHROMIUM") != "" {
			t.Fatalf("SHARDWISE_REQUIRE_CHROMIUM is set and %s is missing; `make browser` installs Debian's chromium", chromiumPath)
		}
		t.Skipf("status page browser test skipped: %s is missing; `make browser` installs Debian's chromium (make test runs it)", chromiumPath)
	}
	s, err := server.New(server.Options{Assignments: fixture(t), ScrapeConfigs: noConfigs{}})
	require.NoError(t, err)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(ts.Client().CloseIdleConnections)

	// What the API serves: targets per collector over every job.
	want := map[string]int{}
	var jobs map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(apiGet(t, ts, "/jobs"), &jobs))
	require.NotEmpty(t, jobs)
	owner := map[string]string{} // address -> collector
	for job := range jobs {
		var byCollector map[string]struct {
			Targets []struct {
				Targets []string `json:"targets"`
			} `json:"targets"`
		}
		require.NoError(t, json.Unmarshal(apiGet(t, ts, "/jobs/"+url.QueryEscape(job)+"/targets"), &byCollector))
		for col, e := range byCollector {
			want[col] += len(e.Targets)
			for _, tg := range e.Targets {
				owner[tg.Targets[0]] = col
			}
		}
	}
	require.Len(t, want, 7)
	peak, total := 0, 0
	for _, n := range want {
		peak, total = max(peak, n), total+n
	}
	wantBalance := fmt.Sprintf("%.3f", float64(peak)/(float64(total)/float64(len(want))))

	opts := append(chromedp.DefaultExecAllocatorOptions[:0:0],
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")),
		chromedp.WindowSize(1200, 900),
		// This machine's network is closed: no background connections.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	run := func(a ...chromedp.Action[chromedp.Void]) { require.NoError(t, chromedp.Do(bctx, a...)) }
	run(chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(chromedp.ID("chart")))
	bars, err := chromedp.Run(bctx, chromedp.Evaluate[[]renderedBar](`Array.from(document.querySelectorAll('rect.bar')).map(r => ({
		collector: r.dataset.collector,
		count: Number(r.dataset.count),
		label: r.parentNode.querySelectorAll('text')[1].textContent,
		width: r.getBoundingClientRect().width,
	}))`))
	require.NoError(t, err)
	balance, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("balance")))
	require.NoError(t, err)
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)

	require.Len(t, bars, 7, "one bar per collector")
	widest := 0.0
	for _, b := range bars {
		widest = max(widest, b.Width)
	}
	seen := map[string]bool{}
	for _, b := range bars {
		require.False(t, seen[b.Collector], "one bar for %s", b.Collector)
		seen[b.Collector] = true
		require.Equal(t, want[b.Collector], b.Count, "bar of %s: the API serves it %d targets", b.Collector, want[b.Collector])
		require.Equal(t, strconv.Itoa(want[b.Collector]), b.Label)
		require.Positive(t, b.Width, "bar of %s is laid out", b.Collector)
		// The busiest collector's bar is the full width; the others in
		// proportion (to a pixel).
		require.InDelta(t, widest*float64(want[b.Collector])/float64(peak), b.Width, 1, "bar of %s", b.Collector)
	}
	require.Equal(t, wantBalance, balance)

	// A lookup typed into the form finds the target and its collector.
	var addr string
	for a := range owner {
		addr = a
		break
	}
	run(
		chromedp.SendKeys(chromedp.CSS(`input[name="q"]`), addr),
		chromedp.Submit(chromedp.CSS(`input[name="q"]`)),
		chromedp.WaitVisible(chromedp.ID("hits")),
	)
	hit, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#hits tr')[1].cells).slice(0, 3).map(c => c.textContent)`))
	require.NoError(t, err)
	require.Len(t, hit, 3)
	require.Equal(t, addr, hit[1])
	require.Equal(t, owner[addr], hit[2], "the lookup names the collector the API serves the target to")

	require.Greater(t, len(shot), 10_000, "a non-trivial screenshot")
	dir := os.Getenv("SHARDWISE_SCREENSHOT_DIR")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(file), "..", "..", "bin")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, "status-page.png")
	require.NoError(t, os.WriteFile(path, shot, 0o644))
	t.Logf("screenshot of the status page kept at %s (%d bytes)", path, len(shot))
}

// apiGet GETs path from ts and returns the body of a 200 answer.
func apiGet(t *testing.T, ts *httptest.Server, path string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+path, nil)
	require.NoError(t, err)
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, path)
	return b
}
