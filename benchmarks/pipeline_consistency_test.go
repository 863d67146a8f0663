package benchmarks

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/benchmarks/internal/fleet"
)

// TestPipelineConsistency runs BenchmarkPipeline's pipeline on a small fleet
// and checks what the collectors are served: every target the jobs'
// relabeling keeps is served to exactly one collector, with its discovered
// labels; no dropped target is served. Then it applies the benchmark's
// one-job update and checks again.
func TestPipelineConsistency(t *testing.T) {
	t.Parallel()
	const targets, jobs, collectors = 3000, 100, 10
	p := newPipeline(t, targets, jobs, collectors)
	require.Equal(t, targets, p.fleet.Targets())
	kept := p.fleet.Kept()
	require.Positive(t, kept)
	require.Less(t, kept, targets, "the fleet must have targets the relabeling drops")

	s := p.full(t, newStages())
	require.Equal(t, kept, s.alloc.Snapshot().Targets())
	gens := map[string]int{}
	checkServed(t, p, s, gens)

	// The benchmark's update: a rolling update of 10% of one job's pods,
	// twice, so the second step replaces the pods the first one added.
	job := p.fleet.Jobs[0]
	for gen := 1; gen <= 2; gen++ {
		n := p.update(t, s, job.Name, job.Groups(gen), newStages())
		require.Positive(t, n, "generation %d: some response must change", gen)
		gens[job.Name] = gen
		checkServed(t, p, s, gens)
	}
}

// checkServed requests every (collector, job) and checks the result against
// the fleet at the given generations (0 for jobs not listed).
func checkServed(t *testing.T, p *pipeline, s *state, gens map[string]int) {
	t.Helper()
	type entry struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	collectors := map[string]bool{}
	total := 0
	for _, j := range p.fleet.Jobs {
		want := j.Discovered(gens[j.Name])
		servedTo := map[string]string{}
		for _, c := range p.collectors {
			w := newRecorder()
			s.handler.ServeHTTP(w, p.byPair[pair{c.Name, j.Name}])
			require.Equal(t, http.StatusOK, w.code, "%s %s", c.Name, j.Name)
			var entries []entry
			require.NoError(t, json.Unmarshal(w.body, &entries), "%s %s", c.Name, j.Name)
			for _, e := range entries {
				require.Len(t, e.Targets, 1)
				addr := e.Targets[0]
				prev, dup := servedTo[addr]
				require.False(t, dup, "job %s: %s served to %s and %s", j.Name, addr, prev, c.Name)
				servedTo[addr] = c.Name
				collectors[c.Name] = true
				tgt, ok := want[addr]
				require.True(t, ok, "job %s: %s served but not discovered", j.Name, addr)
				require.True(t, tgt.Kept, "job %s: %s is dropped by relabeling but served to %s", j.Name, addr, c.Name)
				require.Equal(t, labelMap(tgt.Labels), e.Labels, "job %s: %s: served labels are not the discovered ones", j.Name, addr)
			}
		}
		for addr, tgt := range want {
			if tgt.Kept {
				require.Contains(t, servedTo, addr, "job %s: kept target %s is served to no collector", j.Name, addr)
			}
		}
		total += len(servedTo)
	}
	require.Equal(t, p.fleet.Kept(), total)
	require.Len(t, collectors, len(p.collectors), "every collector should get targets")
}

func labelMap(ls model.LabelSet) map[string]string {
	out := make(map[string]string, len(ls))
	for k, v := range ls {
		out[string(k)] = string(v)
	}
	return out
}

// recorder is a ResponseWriter that keeps the body.
type recorder struct {
	header http.Header
	code   int
	body   []byte
}

func newRecorder() *recorder { return &recorder{header: http.Header{}, code: http.StatusOK} }

func (w *recorder) Header() http.Header         { return w.header }
func (w *recorder) WriteHeader(code int)        { w.code = code }
func (w *recorder) Write(p []byte) (int, error) { w.body = append(w.body, p...); return len(p), nil }

// TestFleet pins the generated fleet's shape: sizes, ~40 labels per target,
// unique addresses, generations that differ in 10% of a job's pods.
func TestFleet(t *testing.T) {
	t.Parallel()
	f := fleet.New(10_050, 100)
	require.Equal(t, 10_050, f.Targets())
	require.Len(t, f.Jobs, 100)
	require.Equal(t, 101, f.Jobs[0].Targets)
	require.Equal(t, 100, f.Jobs[99].Targets)

	seen := map[string]bool{}
	for _, j := range f.Jobs {
		for addr, tgt := range j.Discovered(0) {
			require.False(t, seen[addr], "address %s twice", addr)
			seen[addr] = true
			require.GreaterOrEqual(t, len(tgt.Labels), 38)
			require.LessOrEqual(t, len(tgt.Labels), 44)
		}
	}
	require.Len(t, seen, f.Targets())

	j := f.Jobs[3]
	g1, g2 := j.Discovered(1), j.Discovered(2)
	same := 0
	for addr := range g1 {
		if _, ok := g2[addr]; ok {
			same++
		}
	}
	require.Equal(t, j.Targets-(j.Targets+9)/10, same)
	require.Len(t, j.Groups(0), (j.Targets+fleet.SliceSize-1)/fleet.SliceSize)
}
