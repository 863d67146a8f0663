package cluster

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/internal/testenv"
)

// TestRun runs the whole benchmark at a small size (500 pods in 5
// ServiceMonitor jobs, 3 collectors, a 100-pod rolling update in 2 steps)
// against a real API server and the real allocator binary, and checks its
// results, not its timings: every kept target served exactly once at the
// end, every rollout step seen, and every figure of the summary present.
// The binary is $SHARDWISE_ALLOCATOR_BIN or built from ./cmd/allocator.
func TestRun(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if os.Getenv("SHARDWISE_REQUIRE_ENVTEST") != "" {
			t.Fatal(testenv.ErrUnavailable)
		}
		t.Skip(testenv.ErrUnavailable.Error())
	}
	bin := os.Getenv("SHARDWISE_ALLOCATOR_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "allocator")
		cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/allocator")
		cmd.Dir = testenv.Root()
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "build the allocator: %s", out)
	}
	var log strings.Builder
	sum, err := Run(t.Context(), Options{
		Allocator: bin, CRDDir: testenv.MonitoringCRDs(), Dir: t.TempDir(),
		Targets: 500, Monitors: 5, Collectors: 3, Allocators: 1,
		RolloutPods: 100, RolloutSteps: 2,
		Idle: time.Second, Workers: 16, Timeout: 3 * time.Minute, SampleEvery: 50 * time.Millisecond,
		Log: &log,
	})
	t.Log(log.String())
	require.NoError(t, err)

	require.Equal(t, 500+3, sum.Populate.Pods)
	require.Equal(t, 5, sum.Populate.Services)
	require.Equal(t, 5, sum.Populate.Monitors)
	require.Equal(t, 5, sum.Populate.EndpointSlices, "five workloads of 100 pods, one slice each")
	require.Len(t, sum.Results, 1)
	requireResult(t, sum.Results[0])
	requireRollout(t, sum.Rollout)

	b, err := json.Marshal(sum)
	require.NoError(t, err)
	var fields map[string]any
	require.NoError(t, json.Unmarshal(b, &fields))
	for _, k := range []string{"populate", "results", "rollout", "go_version", "load_average"} {
		require.Contains(t, fields, k)
	}
}

// requireResult checks an allocator's figures in TestRun: sizes, the final
// exactly-once check, and every measurement present and consistent.
func requireResult(t *testing.T, r *Result) {
	t.Helper()
	require.Equal(t, 5, r.Jobs)
	require.Equal(t, 3, r.Collectors)
	require.Equal(t, 500, r.Targets)
	require.True(t, r.ExactlyOnce, "every kept target served exactly once at the end")
	require.Zero(t, r.ExitCode)
	require.Positive(t, r.CompleteSeconds)
	require.GreaterOrEqual(t, r.CompleteSeconds, r.ListeningSeconds)
	require.Positive(t, r.RSSSteadyMiB)
	require.GreaterOrEqual(t, r.RSSPeakMiB, r.RSSSteadyMiB)
	require.NotEmpty(t, r.RSS)
	require.Positive(t, r.IdleSeconds)
	require.GreaterOrEqual(t, r.IdleCPUSeconds, 0.0)

	// The allocator's own requests, from the audit log: it watched what its
	// Kubernetes SD and collector discovery need (client-go's informers
	// stream their initial list through the watch: no list requests).
	for _, k := range []string{"watch pods", "watch endpointslices", "watch services", "watch servicemonitors", "watch namespaces"} {
		require.Positive(t, r.API.ByVerb[k], "%s in %v", k, r.API.ByVerb)
	}
	n := 0
	for _, v := range r.API.ByVerb {
		n += v
	}
	require.Equal(t, r.API.Total, n)

	require.Positive(t, r.Heap.TotalMiB)
	require.Positive(t, r.Heap.InformerMiB)
	require.Positive(t, r.Heap.ShardwiseMiB)
	require.InDelta(t, r.Heap.TotalMiB, r.Heap.InformerMiB+r.Heap.PrometheusSDMiB+r.Heap.ShardwiseMiB+r.Heap.OtherMiB, 0.3)
}

// requireRollout checks TestRun's rolling update: 100 pods in 2 steps.
func requireRollout(t *testing.T, ro *Rollout) {
	t.Helper()
	require.NotNil(t, ro)
	require.Equal(t, "serviceMonitor/a0-team-00/svc-000/0", ro.Job)
	require.Equal(t, 100, ro.Pods)
	require.Len(t, ro.Steps, 2)
	for _, st := range ro.Steps {
		require.Equal(t, 50, st.Replaced)
		require.Equal(t, 1, st.SlicesWritten)
		require.Positive(t, st.Rounds)
	}
}
