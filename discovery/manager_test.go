package discovery

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

// recvUpdate waits for the next Update, bounded.
func recvUpdate(t *testing.T, ch <-chan Update) Update {
	t.Helper()
	select {
	case u, ok := <-ch:
		require.True(t, ok, "updates channel closed")
		return u
	case <-time.After(20 * time.Second):
		t.Fatal("no update within 20s")
		return Update{}
	}
}

// recvUntil receives Updates until cond holds for the accumulated state.
func recvUntil(t *testing.T, ch <-chan Update, state map[string][]string, cond func(map[string][]string) bool) {
	t.Helper()
	for !cond(state) {
		recordUpdate(state, recvUpdate(t, ch))
	}
}

// recordUpdate applies an Update to a job -> addresses state.
func recordUpdate(state map[string][]string, u Update) {
	for job, ts := range u.Targets {
		addrs := []string{}
		for _, tg := range ts {
			addrs = append(addrs, tg.Address)
		}
		state[job] = addrs
	}
}

func startManager(t *testing.T, opts ManagerOptions) (*Manager, context.CancelFunc) {
	t.Helper()
	if opts.CoalesceInterval == 0 {
		opts.CoalesceInterval = 20 * time.Millisecond
	}
	m, err := NewManager(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("Run did not return")
		}
		for range m.Updates() {
		}
	})
	return m, cancel
}

func TestManagerPlainSD(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sdFile := filepath.Join(dir, "targets.json")
	writeFile := func(body string) {
		tmp := sdFile + ".tmp"
		require.NoError(t, os.WriteFile(tmp, []byte(body), 0o600))
		require.NoError(t, os.Rename(tmp, sdFile))
	}
	writeFile(`[{"targets":["f1:9100","f2:9100"],"labels":{"env":"prod"}}]`)

	var httpBody atomic.Value
	httpBody.Store(`[{"targets":["h1:80"],"labels":{"__meta_x":"1"}}]`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(httpBody.Load().(string)))
	}))
	t.Cleanup(srv.Close)

	cfg, err := allocatorconfig.LoadPromConfig(fmt.Appendf(nil, `
scrape_configs:
- job_name: static
  static_configs:
  - targets: ["s1:80", "s2:80", "s3:80"]
  relabel_configs:
  - source_labels: [__address__]
    regex: s3:80
    action: drop
- job_name: file
  file_sd_configs:
  - files: [%q]
    refresh_interval: 50ms
- job_name: http
  http_sd_configs:
  - url: %s
    refresh_interval: 50ms
`, sdFile, srv.URL))
	require.NoError(t, err)

	m, _ := startManager(t, ManagerOptions{})
	require.NoError(t, m.ApplyConfig(cfg))

	first := recvUpdate(t, m.Updates())
	require.Len(t, first.ScrapeConfigs, 3, "the first update carries the job set")
	require.Len(t, first.Targets, 3, "the first update carries every job")
	state := map[string][]string{}
	recordUpdate(state, first)
	recvUntil(t, m.Updates(), state, func(s map[string][]string) bool {
		return len(s["static"]) == 2 && len(s["file"]) == 2 && len(s["http"]) == 1
	})
	require.ElementsMatch(t, []string{"s1:80", "s2:80"}, state["static"], "relabel_configs drop s3")

	// A file change: only the file job is reported.
	writeFile(`[{"targets":["f1:9100"],"labels":{"env":"prod"}}]`)
	u := recvUpdate(t, m.Updates())
	require.Equal(t, []string{"file"}, slices.Collect(maps.Keys(u.Targets)))
	require.Nil(t, u.ScrapeConfigs, "the job set did not change")
	require.Len(t, u.Targets["file"], 1)
	require.Equal(t, "prod", u.Targets["file"][0].Labels.Get("env"))

	// An http_sd change.
	httpBody.Store(`[{"targets":["h1:80","h2:80"]}]`)
	recvUntil(t, m.Updates(), state, func(s map[string][]string) bool { return len(s["http"]) == 2 })

	// A bad config changes nothing.
	dup := *cfg
	dup.ScrapeConfigs = append(dup.ScrapeConfigs, cfg.ScrapeConfigs[0])
	require.ErrorIs(t, m.ApplyConfig(&dup), allocatorconfig.ErrConfig)
	require.Len(t, m.ScrapeConfigs(), 3)

	// Removing a job reports it empty.
	smaller := *cfg
	smaller.ScrapeConfigs = cfg.ScrapeConfigs[:2]
	require.NoError(t, m.ApplyConfig(&smaller))
	u = recvUpdate(t, m.Updates())
	require.Len(t, u.ScrapeConfigs, 2)
	require.Contains(t, u.Targets, "http")
	require.Empty(t, u.Targets["http"])
}

func TestManagerUnion(t *testing.T) {
	t.Parallel()
	file, err := allocatorconfig.LoadPromConfig([]byte(`
scrape_configs:
- job_name: shared
  static_configs: [{targets: ["file:1"]}]
- job_name: only-file
  static_configs: [{targets: ["file:2"]}]
`))
	require.NoError(t, err)
	op, err := allocatorconfig.LoadPromConfig([]byte(`
scrape_configs:
- job_name: shared
  static_configs: [{targets: ["op:1"]}]
- job_name: serviceMonitor/ns/a/0
  static_configs: [{targets: ["op:2"]}]
`))
	require.NoError(t, err)

	m, _ := startManager(t, ManagerOptions{})
	require.NoError(t, m.ApplyOperatorConfig(op.ScrapeConfigs))
	require.NoError(t, m.ApplyConfig(file))
	state := map[string][]string{}
	recvUntil(t, m.Updates(), state, func(s map[string][]string) bool {
		return len(s["shared"]) == 1 && len(s["only-file"]) == 1 && len(s["serviceMonitor/ns/a/0"]) == 1
	})
	require.Equal(t, []string{"file:1"}, state["shared"], "a file job wins a name clash")
	require.Len(t, m.ScrapeConfigs(), 3)

	require.NoError(t, m.ApplyOperatorConfig(nil))
	recvUntil(t, m.Updates(), state, func(s map[string][]string) bool { return len(s["serviceMonitor/ns/a/0"]) == 0 })
	require.Len(t, m.ScrapeConfigs(), 2)
}

func TestManagerNoJobs(t *testing.T) {
	t.Parallel()
	m, _ := startManager(t, ManagerOptions{})
	require.NoError(t, m.ApplyConfig(nil))
	u := recvUpdate(t, m.Updates())
	require.NotNil(t, u.ScrapeConfigs)
	require.Empty(t, u.ScrapeConfigs)
	require.Empty(t, u.Targets)
}

func TestManagerWaitsForOperatorConfig(t *testing.T) {
	t.Parallel()
	file, err := allocatorconfig.LoadPromConfig([]byte("scrape_configs:\n- job_name: f\n  static_configs: [{targets: [\"f:1\"]}]\n"))
	require.NoError(t, err)
	op, err := allocatorconfig.LoadPromConfig([]byte("scrape_configs:\n- job_name: serviceMonitor/a/b/0\n  static_configs: [{targets: [\"o:1\"]}]\n"))
	require.NoError(t, err)
	m, _ := startManager(t, ManagerOptions{WaitForOperatorConfig: true})
	require.NoError(t, m.ApplyConfig(file))
	// Give service discovery for the file job every chance to report first.
	require.Eventually(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.syncedJobs
	}, 20*time.Second, 5*time.Millisecond)
	require.NoError(t, m.ApplyOperatorConfig(op.ScrapeConfigs))
	first := recvUpdate(t, m.Updates())
	require.Len(t, first.ScrapeConfigs, 2, "the first update includes prometheus-operator jobs")
	require.Contains(t, first.Targets, "serviceMonitor/a/b/0")
}
