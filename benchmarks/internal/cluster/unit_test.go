package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLayout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                                  string
		targets, monitors, collectors, allocs int
		rollout                               int
		wantRollout                           int
	}{
		{"one allocator", 10_000, 100, 10, 1, 1000, 1000},
		{"small", 500, 5, 3, 1, 1000, 250},
		{"two allocators", 20_001, 100, 10, 2, 1000, 1000},
		{"one monitor", 300, 1, 1, 1, 1000, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, err := NewLayout(tc.targets, tc.monitors, tc.collectors, tc.allocs, tc.rollout)
			require.NoError(t, err)
			require.Len(t, l.Allocators, tc.allocs)
			require.Equal(t, tc.targets, l.Pods())
			require.Len(t, l.Rollout().Pods, tc.wantRollout)
			names, ips, jobs := map[string]bool{}, map[string]bool{}, map[string]bool{}
			monitors, collectors := 0, 0
			for _, a := range l.Allocators {
				collectors += len(a.Collectors)
				monitors += len(a.Workloads)
				for _, w := range a.Workloads {
					require.Equal(t, a.Name, w.Allocator)
					require.False(t, jobs[w.Job()], "job %s twice", w.Job())
					jobs[w.Job()] = true
					require.Len(t, w.Targets(), len(w.Pods))
					slices := w.EndpointSlices()
					require.Len(t, slices, (len(w.Pods)+EndpointsPerSlice-1)/EndpointsPerSlice)
					for _, p := range w.Pods {
						require.False(t, names[w.Namespace+"/"+p.Name], "pod %s twice", p.Name)
						require.False(t, ips[p.IP], "address %s twice", p.IP)
						names[w.Namespace+"/"+p.Name], ips[p.IP] = true, true
					}
				}
			}
			require.Equal(t, tc.monitors, monitors)
			require.Equal(t, tc.collectors, collectors)
		})
	}
	for _, bad := range [][5]int{{0, 1, 1, 1, 1}, {10, 1, 1, 2, 1}, {10, 2, 1, 2, 1}, {10, 1, 1, 0, 1}, {10, 1, 1, 1, 0}} {
		_, err := NewLayout(bad[0], bad[1], bad[2], bad[3], bad[4])
		require.Error(t, err, "%v", bad)
	}
}

func TestRolloutPodsAreNew(t *testing.T) {
	t.Parallel()
	l, err := NewLayout(1000, 2, 1, 1, 400)
	require.NoError(t, err)
	w := l.Rollout()
	before := w.Targets()
	hash := w.templateHash()
	w.Generation++
	require.NotEqual(t, hash, w.templateHash())
	for _, p := range l.newPods(w, len(w.Pods)) {
		require.False(t, before[p.IP+":9090"], "a new pod reuses %s", p.IP)
		require.Contains(t, p.Name, w.templateHash())
	}
}

func TestSuffixIsInjective(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for n := range uint64(400_000) {
		s := suffix(n)
		require.False(t, seen[s], "suffix %d repeats %s", n, s)
		seen[s] = true
	}
}

func TestAddresses(t *testing.T) {
	t.Parallel()
	type entry struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	in := []entry{
		{[]string{"10.0.0.1:9090"}, map[string]string{"a": `"targets":["x"]`, "targets": "y"}},
		{[]string{"10.0.0.2:9090", "10.0.0.3:9090"}, nil},
		{[]string{}, map[string]string{}},
	}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	got, err := addresses(b)
	require.NoError(t, err)
	require.Equal(t, []string{"10.0.0.1:9090", "10.0.0.2:9090", "10.0.0.3:9090"}, got)

	got, err = addresses([]byte("[]\n"))
	require.NoError(t, err)
	require.Empty(t, got)
	for _, bad := range []string{"", "{}", `[{"targets":["a`, `[{"targets":[1]}]`, `[{"targets":["a"`} {
		_, err := addresses([]byte(bad))
		require.Error(t, err, bad)
	}
}

func TestCountRequests(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ev := func(stage, verb, user, resource string, at time.Time) string {
		return fmt.Sprintf(`{"kind":"Event","level":"Metadata","stage":%q,"verb":%q,"user":{"username":%q},"objectRef":{"resource":%q},"requestReceivedTimestamp":%q}`,
			stage, verb, user, resource, at.Format(time.RFC3339Nano))
	}
	lines := []string{
		ev("ResponseComplete", "list", "a", "pods", t0),
		ev("ResponseStarted", "watch", "a", "pods", t0.Add(time.Second)),
		ev("ResponseComplete", "watch", "a", "pods", t0.Add(time.Second)), // the same watch ending
		ev("ResponseComplete", "create", "a", "events", t0.Add(5*time.Second)),
		ev("ResponseComplete", "list", "b", "endpointslices", t0),
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	var buf bytes.Buffer
	for _, l := range lines {
		buf.WriteString(l + "\n")
	}
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
	got, err := countRequests(path, map[string][2]time.Time{"a": {t0.Add(2 * time.Second), t0.Add(10 * time.Second)}})
	require.NoError(t, err)
	require.Equal(t, &APIRequests{Total: 3, ByVerb: map[string]int{"list pods": 1, "watch pods": 1, "create events": 1}, Idle: 1}, got["a"])
	require.Equal(t, &APIRequests{Total: 1, ByVerb: map[string]int{"list endpointslices": 1}}, got["b"])
	require.Contains(t, auditPolicy([]string{"a", "b"}), `- "b"`)
}

func TestClassifyHeap(t *testing.T) {
	t.Parallel()
	keep := make([][]byte, 64)
	for i := range keep {
		keep[i] = make([]byte, 64<<10)
	}
	runtime.GC()
	var buf bytes.Buffer
	require.NoError(t, pprof.Lookup("heap").WriteTo(&buf, 0))
	h, err := classifyHeap(buf.Bytes())
	require.NoError(t, err)
	require.Positive(t, h.TotalMiB)
	require.Positive(t, h.ShardwiseMiB, "this test's allocations are the package's own")
	require.InDelta(t, h.TotalMiB, h.InformerMiB+h.PrometheusSDMiB+h.ShardwiseMiB+h.OtherMiB, 0.3)
	_, err = classifyHeap([]byte("not a profile"))
	require.Error(t, err)
	_ = keep[63][0]
}
