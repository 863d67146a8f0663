package allocator

import (
	"errors"
	"fmt"
	"log/slog"
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
	// handoff settle 1ns: the joiner's first poll releases c0 (see appConfig).
	cfg := "listen_addr: 127.0.0.1:0\nhandoff: {settle: 1ns}\ncollectors: %s\nconfig:\n  scrape_configs:\n  - job_name: j\n    static_configs: [{targets: [a:1, b:1, c:1, d:1, e:1, f:1]}]\n"
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

// TestConfigWatchIgnoresOtherFiles: writes to other files of the config's
// directory (a log written next to it: each reload logs a line, which
// reloaded again, four times a second while idle) and a rewrite with the
// same content reload nothing; a change of the content, also through a
// Kubernetes ConfigMap's ..data symlink swap, reloads once.
func TestConfigWatchIgnoresOtherFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "ta.yaml")
	require.NoError(t, os.WriteFile(path, []byte("collectors: [c0]\n"), 0o600))
	const delay = 50 * time.Millisecond
	reload := make(chan struct{}, 1)
	done := make(chan error, 1)
	loaded := fileSum(slog.New(slog.DiscardHandler), path)
	go func() {
		done <- watchFile(t.Context(), slog.New(slog.DiscardHandler), path, fileWatch{delay: delay}, loaded, reload)
	}()
	t.Cleanup(func() { require.NoError(t, <-done) })

	// The config is replaced, never rewritten in place: a reload while a
	// write has truncated the file would see it empty (and keep the last
	// good config), and then signal again.
	// Until the watch is set up, writes may go unseen: wait for a change
	// to be signalled before the writes that must not be.
	changed := func(content string) {
		t.Helper()
		writeAtomic(t, path, content)
		select {
		case <-reload:
		case <-time.After(10 * time.Second):
			require.FailNow(t, "no reload after the config changed", content)
		}
	}
	for i := 0; ; i++ {
		require.Less(t, i, 10, "no reload after ten changes")
		writeAtomic(t, path, fmt.Sprintf("collectors: [c0, c1]\n# %d\n", i))
		select {
		case <-reload:
		case <-time.After(5 * time.Second):
			continue
		}
		break
	}
	unchanged, err := os.ReadFile(path)
	require.NoError(t, err)
	for i := range 20 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "allocator.log"), fmt.Appendf(nil, "line %d\n", i), 0o600))
		writeAtomic(t, path, string(unchanged))
	}
	// Nothing may arrive, so this waits: twenty times the coalescing delay,
	// after which a signal would have been sent. A slow machine can only
	// make this pass wrongly, never fail wrongly.
	time.Sleep(20 * delay)
	require.Empty(t, reload, "writes that changed nothing are not signalled")
	changed("collectors: [c0, c1, c2]\n")

	// A ConfigMap update: the content moves behind the ..data symlink.
	data := filepath.Join(dir, "..2026_12_01")
	require.NoError(t, os.Mkdir(data, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(data, "ta.yaml"), []byte("collectors: [c3]\n"), 0o600))
	require.NoError(t, os.Symlink(filepath.Base(data), filepath.Join(dir, "..data")))
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.Symlink(filepath.Join("..data", "ta.yaml"), path))
	select {
	case <-reload:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no reload after the ..data swap")
	}
}

// writeAtomic replaces the file at path with content by a rename.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// TestConfigChangedBeforeWatch: a change written after the allocator loaded
// its config but before the watch was set up is not lost: the watch compares
// the file with what was loaded as it starts, with fsnotify and when polling.
func TestConfigChangedBeforeWatch(t *testing.T) {
	t.Parallel()
	for name, fw := range map[string]fileWatch{
		"fsnotify": {delay: time.Millisecond},
		"polling":  {err: errors.New("no inotify"), poll: 10 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "ta.yaml")
			require.NoError(t, os.WriteFile(path, []byte("collectors: [c0]\n"), 0o600))
			loaded := fileSum(slog.New(slog.DiscardHandler), path)
			require.NoError(t, os.WriteFile(path, []byte("collectors: [c0, c1]\n"), 0o600))
			reload := make(chan struct{}, 1)
			done := make(chan error, 1)
			go func() {
				done <- watchFile(t.Context(), slog.New(slog.DiscardHandler), path, fw, loaded, reload)
			}()
			t.Cleanup(func() { require.NoError(t, <-done) })
			select {
			case <-reload:
			case <-time.After(10 * time.Second):
				require.FailNow(t, "the change made before the watch started was never signalled")
			}
		})
	}
}
