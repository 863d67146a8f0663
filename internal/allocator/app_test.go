package allocator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/shardwise/shardwise/internal/allocator/upstreammetrics"
	"github.com/shardwise/shardwise/internal/testenv"
)

var env *testenv.Env

// TestMain starts one control plane for the tests that discover collector
// pods, and checks for leaked goroutines after all tests.
func TestMain(m *testing.M) {
	gin.SetMode(gin.ReleaseMode)
	code := testenv.Main(m, &env, testenv.MonitoringCRDs())
	if code == 0 {
		if err := goleak.Find(testenv.LeakIgnores()...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// appConfig's handoff settles in 1 ns: a joiner's first poll releases the
// previous collectors at once (TestHandoffProcess covers the handoff), so
// the tests can count each target once right after a change.
const appConfig = `
listen_addr: 127.0.0.1:0
handoff: {settle: 1ns}
collectors: %s
config:
  scrape_configs:
    - job_name: static job
      static_configs:
        - targets: [a:1, b:1, c:1, d:1, e:1, f:1]
    - job_name: serviceMonitor/ns/files/0
      file_sd_configs:
        - files: [targets.json]
      relabel_configs:
        - source_labels: [keep]
          regex: "no"
          action: drop
`

const fileTargets = `[{"targets": ["f1:9", "f2:9", "f3:9"], "labels": {"keep": "yes"}},
 {"targets": ["dropped:9"], "labels": {"keep": "no"}}]`

// runApp starts the allocator on a config written to a temp dir and returns
// its base URL and the config path.
func runApp(t *testing.T, collectors string) (base, path string, reg *prometheus.Registry) {
	t.Helper()
	dir := t.TempDir()
	path = filepath.Join(dir, "ta.yaml")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "targets.json"), []byte(fileTargets), 0o600))
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, appConfig, collectors), 0o600))
	base, reg = start(t, path)
	return base, path, reg
}

// start runs the allocator on the config file at path and returns its base
// URL once it is ready.
func start(t *testing.T, path string) (base string, reg *prometheus.Registry) {
	t.Helper()

	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	reg = prometheus.NewRegistry()
	go func() {
		done <- Run(ctx, Options{
			ConfigFile:       path,
			Registry:         reg,
			ReloadDelay:      20 * time.Millisecond,
			CoalesceInterval: 20 * time.Millisecond,
			Ready:            func(addr string) { ready <- addr },
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	select {
	case addr := <-ready:
		base = "http://" + addr
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("server did not start")
	}
	eventually(t, func() bool { return !strings.HasPrefix(get(t, base+"/readyz"), "status ") })
	return base, reg
}

func get(t *testing.T, u string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("status %d: %s", resp.StatusCode, b)
	}
	return string(b)
}

func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// assigned returns, per collector, the addresses it is served for job.
func assigned(t *testing.T, base, job string, collectors ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, c := range collectors {
		body := get(t, base+"/jobs/"+url.QueryEscape(job)+"/targets?collector_id="+c)
		var groups []struct {
			Targets []string          `json:"targets"`
			Labels  map[string]string `json:"labels"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &groups), body)
		for _, g := range groups {
			out[c] = append(out[c], g.Targets...)
		}
	}
	return out
}

func count(m map[string][]string) int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
}

func TestRunServesAndReloads(t *testing.T) {
	t.Parallel()
	base, path, reg := runApp(t, "[c0, c1]")

	var jobs map[string]map[string]string
	require.NoError(t, json.Unmarshal([]byte(get(t, base+"/jobs")), &jobs))
	require.Equal(t, "/jobs/serviceMonitor%2Fns%2Ffiles%2F0/targets", jobs["serviceMonitor/ns/files/0"]["_link"])

	eventually(t, func() bool { return count(assigned(t, base, "serviceMonitor/ns/files/0", "c0", "c1")) == 3 })
	static := assigned(t, base, "static job", "c0", "c1")
	require.Equal(t, 6, count(static), "every target once")
	for _, addrs := range assigned(t, base, "serviceMonitor/ns/files/0", "c0", "c1") {
		require.NotContains(t, addrs, "dropped:9", "relabel_configs drop the target before allocation")
	}

	// A third collector: the reload spreads the targets over it.
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, appConfig, "[{name: c0}, {name: c1}, {name: c2}]"), 0o600))
	eventually(t, func() bool {
		a := assigned(t, base, "static job", "c0", "c1", "c2")
		return count(a) == 6 && len(a["c2"]) > 0
	})

	// A broken config is refused; the last good one keeps serving.
	before := assigned(t, base, "static job", "c0", "c1", "c2")
	require.NoError(t, os.WriteFile(path, []byte("collectors: [{name: c0}]\nbogus_key: 1\n"), 0o600))
	eventually(t, func() bool { return metricValue(t, reg, "shardwise_allocator_config_reloads_total", "failure") >= 1 })
	require.Equal(t, before, assigned(t, base, "static job", "c0", "c1", "c2"))
	page := get(t, base+"/metrics")
	require.Contains(t, page, "shardwise_allocator_targets{collector=\"c2\"}")

	// Upstream's names are served too, each made of a metric the allocator
	// really registers, with the same values.
	for _, m := range upstreammetrics.Mappings("consistent-hashing") {
		require.Contains(t, page, "\n"+m.From, "the allocator registers %s", m.From)
		require.Contains(t, page, "\n"+m.Upstream, "%s is served, made of %s", m.Upstream, m.From)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(page))
	require.NoError(t, err)
	ours := map[string]float64{}
	for _, m := range families["shardwise_allocator_targets"].GetMetric() {
		ours[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
	}
	theirs := map[string]float64{}
	for _, m := range families["opentelemetry_allocator_targets_per_collector"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "collector_name" {
				theirs[l.GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	require.Len(t, ours, 3)
	require.Equal(t, ours, theirs)
}

func metricValue(t *testing.T, reg *prometheus.Registry, name, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func TestRunRejectsBadConfigAtStart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ta.yaml")
	require.NoError(t, os.WriteFile(path, []byte("allocation_strategy: dice\n"), 0o600))
	err := Run(t.Context(), Options{ConfigFile: path})
	require.ErrorContains(t, err, `"dice"`)
}
