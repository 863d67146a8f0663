package app

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConfigPollingWhenWatchFails is issue 11 item 10: when the fsnotify
// watch cannot be set up, the allocator starts anyway and polls the file.
func TestConfigPollingWhenWatchFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "ta.yaml")
	cfg := "listen_addr: 127.0.0.1:0\ncollectors: %s\nconfig:\n  scrape_configs:\n  - job_name: j\n    static_configs: [{targets: [a:1, b:1, c:1, d:1, e:1, f:1]}]\n"
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, cfg, "[c0]"), 0o600))
	base, _ := startNoWait(t, path, func(o *Options) {
		o.watchErr = errors.New("too many open files")
		o.PollInterval = 20 * time.Millisecond
	})
	eventually(t, func() bool { c, _ := status(t, base+"/readyz"); return c == http.StatusOK })
	eventually(t, func() bool { return count(assigned(t, base, "j", "c0")) == 6 })
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, cfg, "[c0, c1]"), 0o600))
	eventually(t, func() bool {
		a := assigned(t, base, "j", "c0", "c1")
		return count(a) == 6 && len(a["c1"]) > 0
	})
}

// TestLivezStuckLoop is issue 11 item 10: /livez answers 503 while one step
// of the allocation loop is stuck, and 200 again once it moves.
func TestLivezStuckLoop(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ta.yaml")
	cfg := "listen_addr: 127.0.0.1:0\ncollectors: %s\n"
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, cfg, "[c0]"), 0o600))
	block := make(chan struct{})
	blocking := make(chan bool, 1)
	blocking <- false
	base, _ := startNoWait(t, path, func(o *Options) {
		o.LivenessTimeout = 100 * time.Millisecond
		o.ReloadDelay = time.Millisecond
		o.beforeStep = func() {
			if b := <-blocking; b {
				blocking <- false
				<-block
				return
			}
			blocking <- false
		}
	})
	code, _ := status(t, base+"/livez")
	require.Equal(t, http.StatusOK, code)
	<-blocking
	blocking <- true
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, cfg, "[c0, c1]"), 0o600))
	eventually(t, func() bool {
		code, _ := status(t, base+"/livez")
		return code == http.StatusServiceUnavailable
	})
	close(block)
	eventually(t, func() bool {
		code, _ := status(t, base+"/livez")
		return code == http.StatusOK
	})
}
