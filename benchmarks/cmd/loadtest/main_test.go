package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/benchmarks/internal/fleet"
	"github.com/shardwise/shardwise/internal/allocator"

	"github.com/shardwise/shardwise/benchmarks/internal/procfs"
)

// TestInProcess runs the generated config and target files through the
// allocator program in this process (allocator.Run, as cmd/allocator does) and
// drives it with the command's wait, load and consistency check for a second.
func TestInProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := fleet.New(2000, 20)
	cfg, size, err := write(dir, f, 4)
	require.NoError(t, err)
	require.Positive(t, size)

	started := time.Now()
	base, stop := inProcess(t, cfg)

	o := options{targets: 2000, jobs: 20, collectors: 4, duration: time.Second, workers: 2, maxRequests: 1_000_000, readyWait: time.Minute}
	var sum Summary
	require.NoError(t, measure(t.Context(), base, started, f, o, &sum, 0, io.Discard, nil))
	require.True(t, sum.Consistent)
	require.Zero(t, sum.Errors, "errors: %v", sum.ErrorMessages)
	require.Positive(t, sum.Requests)
	require.Positive(t, sum.P50ms)
	require.GreaterOrEqual(t, sum.MaxMs, sum.P99ms)
	require.GreaterOrEqual(t, sum.P99ms, sum.P50ms)
	require.Positive(t, sum.MeanResponseKB)
	require.NoError(t, stop())
}

// inProcess runs the allocator program on the config file cfg in this
// process (allocator.Run, as cmd/allocator does) and returns its base URL
// once it listens, and stop, which ends it and returns Run's error.
func inProcess(t *testing.T, cfg string) (base string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	addr := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- allocator.Run(ctx, allocator.Options{ConfigFile: cfg, Ready: func(a string) { addr <- a }})
	}()
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-errc:
		t.Fatalf("allocator stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("allocator did not listen")
	}
	return base, func() error {
		cancel()
		return <-errc
	}
}

// TestMaxRequests checks that the request cap bounds the load and is not
// counted as an error.
func TestMaxRequests(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := fleet.New(500, 5)
	cfg, _, err := write(dir, f, 2)
	require.NoError(t, err)
	base, stop := inProcess(t, cfg)
	o := options{targets: 500, jobs: 5, collectors: 2, duration: 10 * time.Second, workers: 2, maxRequests: 50, readyWait: time.Minute}
	var sum Summary
	require.NoError(t, measure(t.Context(), base, time.Now(), f, o, &sum, 0, io.Discard, nil))
	require.Equal(t, uint64(50), sum.Requests)
	require.Zero(t, sum.Errors, "errors: %v", sum.ErrorMessages)
	require.NoError(t, stop())
}

func TestProcStatus(t *testing.T) {
	t.Parallel()
	st, err := procfs.Status(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, st.RSS)
	require.GreaterOrEqual(t, st.HWM, st.RSS)
	require.GreaterOrEqual(t, cpuSeconds(os.Getpid()), 0.0)
}

func TestFlags(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	require.Equal(t, 2, run([]string{"-targets", "0"}, &out, &errb))
	require.Equal(t, 2, run([]string{"-nosuchflag"}, &out, &errb))
}

// TestBinary runs the whole command against the allocator binary named by
// SHARDWISE_ALLOCATOR_BIN (make build; bin/allocator), on a small fleet.
func TestBinary(t *testing.T) {
	bin := os.Getenv("SHARDWISE_ALLOCATOR_BIN")
	if bin == "" {
		t.Skip("SHARDWISE_ALLOCATOR_BIN is not set (make build, then SHARDWISE_ALLOCATOR_BIN=$PWD/bin/allocator)")
	}
	t.Parallel()
	var out, errb bytes.Buffer
	jsonPath := t.TempDir() + "/summary.json"
	code := run([]string{"-allocator", bin, "-targets", "3000", "-jobs", "30", "-collectors", "3", "-duration", "1s", "-workers", "2", "-json", jsonPath}, &out, &errb)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var sum Summary
	require.NoError(t, json.Unmarshal(b, &sum))
	require.True(t, sum.Consistent)
	require.Positive(t, sum.PeakRSSMB)
	require.GreaterOrEqual(t, sum.PeakRSSMB, sum.RSSIdleMB)
	require.Equal(t, 0, sum.ExitCode)
	require.Contains(t, out.String(), "peak RSS, whole run (MB)")
}
