//go:build linux

package server

import (
	"bytes"
	"context"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const chromiumPath = "/usr/bin/chromium"

// ensureChromium returns the path of Debian's chromium, installing the
// package when it is missing, or skips the test when that is impossible.
func ensureChromium(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err == nil {
		return chromiumPath
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skipf("status page browser test skipped: %s is missing and apt-get is not available to install Debian's chromium package", chromiumPath)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	for _, args := range [][]string{{"update"}, {"install", "-y", "chromium"}} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("status page browser test skipped: %s is missing and `apt-get %v` failed (%v): %s", chromiumPath, args, err, lastLines(out, 5))
		}
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("status page browser test skipped: apt-get installed chromium but %s is still missing", chromiumPath)
	}
	return chromiumPath
}

func lastLines(b []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte{'\n'})
	return bytes.Join(lines[max(0, len(lines)-n):], []byte{'\n'})
}

// TestStatusPageInChromium loads the status page in headless Chromium,
// checks in the rendered DOM that every collector's bar is there, and keeps
// a screenshot that must show the bars.
func TestStatusPageInChromium(t *testing.T) {
	t.Parallel()
	bin := ensureChromium(t)
	a := statusFixture(t)
	a.SetCollectors(mkCollectors(7))
	ts := httptest.NewServer(newServer(t, a, &fakeConfigs{ready: true}).Handler())
	t.Cleanup(ts.Close)

	dir := t.TempDir()
	shot := filepath.Join(dir, "status.png")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"),
		"--screenshot="+shot, "--window-size=1200,900", "--dump-dom",
		ts.URL+"/")
	// Chromium forks helpers: run it in its own process group and kill the
	// whole group on timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "chromium: %s", lastLines(stderr.Bytes(), 10))

	dom := stdout.String()
	snap := a.Snapshot()
	require.Len(t, snap.Collectors(), 7)
	for i, c := range snap.Collectors() {
		require.Contains(t, dom, `data-collector="`+c+`" data-count="`+strconv.Itoa(snap.Loads()[i])+`"`, "bar of %s in the rendered DOM", c)
	}
	require.Equal(t, 7, bytes.Count(stdout.Bytes(), []byte(`<rect class="bar"`)))

	raw, err := os.ReadFile(shot)
	require.NoError(t, err)
	require.Greater(t, len(raw), 10_000, "a non-trivial PNG")
	img, err := png.Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Equal(t, 1200, img.Bounds().Dx())
	require.Equal(t, 900, img.Bounds().Dy())
	// The bars' fill (#3c78d8) covers a good part of the chart.
	bars, colors := 0, map[uint32]bool{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			r, g, b = r>>8, g>>8, b>>8
			colors[r<<16|g<<8|b] = true
			if r == 0x3c && g == 0x78 && b == 0xd8 {
				bars++
			}
		}
	}
	require.Greater(t, len(colors), 20, "more than a blank page")
	require.Greater(t, bars, 7*16*100, "every bar is painted (about 16 px high, hundreds wide)")
	t.Logf("screenshot kept at %s (%d bytes, %d bar pixels)", shot, len(raw), bars)
	if out := os.Getenv("SHARDWISE_SCREENSHOT_DIR"); out != "" {
		// t.TempDir is removed with the test; this keeps a copy to look at.
		require.NoError(t, os.WriteFile(filepath.Join(out, "status.png"), raw, 0o644))
	}
}
