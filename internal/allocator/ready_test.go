package allocator

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
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// startNoWait runs the allocator on the config file at path and returns its
// base URL as soon as it listens, without waiting for /readyz.
func startNoWait(t *testing.T, path string, mod func(*Options)) (base string, reg *prometheus.Registry) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	reg = prometheus.NewRegistry()
	opts := Options{
		ConfigFile:       path,
		Registry:         reg,
		ReloadDelay:      20 * time.Millisecond,
		CoalesceInterval: 20 * time.Millisecond,
		Ready:            func(addr string) { ready <- addr },
	}
	if mod != nil {
		mod(&opts)
	}
	go func() { done <- Run(ctx, opts) }()
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
		return "http://" + addr, reg
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("server did not start")
	}
	return "", nil
}

// status returns the status code and body of a GET.
func status(t *testing.T, u string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// slowSD is an http_sd server that answers every request after delay.
func slowSD(t *testing.T, delay time.Duration, body string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var answered atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
		answered.Add(1)
	}))
	t.Cleanup(srv.Close)
	return srv, &answered
}

const slowConfig = `
listen_addr: 127.0.0.1:0
collectors: [c0]
config:
  scrape_configs:
    - job_name: static
      static_configs:
        - targets: [s:1]
    - job_name: slow
      http_sd_configs:
        - url: %s
          refresh_interval: %s
`

// TestSlowProviderNeverServedEmpty is issue 11 item 2: an http_sd job whose
// server answers after 3 s is never served empty, neither at start nor after
// a config reload that replaces its provider, and /readyz waits for it.
func TestSlowProviderNeverServedEmpty(t *testing.T) {
	t.Parallel()
	srv, answered := slowSD(t, 3*time.Second, `[{"targets":["h1:80","h2:80"]}]`)
	path := filepath.Join(t.TempDir(), "ta.yaml")
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, slowConfig, srv.URL, "1m"), 0o600))
	base, _ := startNoWait(t, path, nil)
	targetsURL := base + "/jobs/" + url.QueryEscape("slow") + "/targets?collector_id=c0"

	// check fails when anything serves the slow job as empty or absent.
	check := func() (served bool) {
		code, body := status(t, base+"/scrape_configs")
		if code == http.StatusOK {
			var cfgs map[string]any
			require.NoError(t, json.Unmarshal([]byte(body), &cfgs))
			require.Contains(t, cfgs, "slow", "/scrape_configs served without the slow job")
		}
		code, body = status(t, targetsURL)
		if code == http.StatusOK {
			var groups []any
			require.NoError(t, json.Unmarshal([]byte(body), &groups))
			require.Len(t, groups, 2, "the slow job served as %s", body)
			served = true
		}
		ready, _ := status(t, base+"/readyz")
		if ready == http.StatusOK {
			require.Positive(t, answered.Load(), "/readyz is 200 before the slow provider answered")
		}
		return served
	}
	eventually(t, check)
	code, _ := status(t, base+"/readyz")
	require.Equal(t, http.StatusOK, code)

	// A reload that changes the provider: until the new one answers, the
	// job keeps its targets.
	before := answered.Load()
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, slowConfig, srv.URL, "2m"), 0o600))
	eventually(t, func() bool {
		require.True(t, check())
		return answered.Load() > before
	})
	require.True(t, check())
}
