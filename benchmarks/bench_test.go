package benchmarks

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/benchmarks/internal/scenario"
	"github.com/shardwise/shardwise/benchmarks/internal/strategy"
)

var (
	benchTargets    = []int{10000, 100000}
	benchCollectors = []int{3, 10, 30, 100}
)

// workloads caches one workload per size: building 100k targets takes longer
// than some of the benchmarks.
var (
	workloadsMu sync.Mutex
	workloads   = map[int]map[string][]*allocation.Target{}
)

func jobs(targets int) map[string][]*allocation.Target {
	workloadsMu.Lock()
	defer workloadsMu.Unlock()
	if w, ok := workloads[targets]; ok {
		return w
	}
	w := scenario.NewWorkload(targets, 100, 1).Jobs()
	workloads[targets] = w
	return w
}

func factories() []strategy.Factory {
	var out []strategy.Factory
	for _, name := range strategy.Names() {
		out = append(out, strategy.Factory{Name: name, Epsilon: allocation.DefaultEpsilon})
	}
	return out
}

func mustNew(b *testing.B, f strategy.Factory) strategy.Strategy {
	s, err := f.New()
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// retained measures the live heap a fresh, fully assigned strategy holds per
// target, beyond the targets themselves (which the workload already holds).
func retained(b *testing.B, f strategy.Factory, js map[string][]*allocation.Target, names []string, targets int) (float64, strategy.Strategy) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := mustNew(b, f)
	s.SetCollectors(names)
	s.SetJobTargets(js)
	runtime.GC()
	runtime.ReadMemStats(&after)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(targets), s
}

// BenchmarkStrategyAssign compares the strategies on the first assignment
// (allocation's BenchmarkAssign measures shardwise's alone): SetCollectors then
// SetJobTargets on a fresh strategy. ns/target is the time per target,
// B/target the live heap the strategy keeps per target afterwards (measured
// once, outside the timed loop), max/mean the balance it reaches.
func BenchmarkStrategyAssign(b *testing.B) {
	runGrid(b, func(b *testing.B, f strategy.Factory, T, n int) {
		js := jobs(T)
		names := scenario.Names(n)
		perTarget, s := retained(b, f, js, names, T)
		loads := scenario.Loads(owners(s, js), names)
		b.ReportAllocs()
		iters := 0
		for b.Loop() {
			s := mustNew(b, f)
			s.SetCollectors(names)
			s.SetJobTargets(js)
			iters++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(iters*T), "ns/target")
		b.ReportMetric(perTarget, "B/target")
		b.ReportMetric(scenario.Balance(loads), "max/mean")
	})
}

// BenchmarkStrategyJoin compares the strategies on one collector joining N
// (N→N+1; allocation's BenchmarkJoin measures shardwise's alone); the joiner leaves
// again outside the timed part. moved/optimal is the targets moved over
// ⌊T/(N+1)⌋ and max/mean the balance after the join, both from the first
// join.
func BenchmarkStrategyJoin(b *testing.B) {
	runGrid(b, func(b *testing.B, f strategy.Factory, T, n int) {
		js := jobs(T)
		names, joined := scenario.Names(n), scenario.Names(n+1)
		s := mustNew(b, f)
		r := scenario.NewRunner(s, allocation.DefaultEpsilon)
		r.Apply(scenario.Change{Collectors: names, Jobs: js})
		join := r.Apply(scenario.Change{Collectors: joined})
		r.Quiet(scenario.Change{Collectors: names})
		b.ReportAllocs()
		for b.Loop() {
			s.SetCollectors(joined)
			b.StopTimer()
			s.SetCollectors(names)
			b.StartTimer()
		}
		b.ReportMetric(float64(join.Moved)/float64(T/(n+1)), "moved/optimal")
		b.ReportMetric(join.Balance, "max/mean")
	})
}

// runGrid runs bench as a sub-benchmark for every strategy, target count
// (benchTargets) and collector count (benchCollectors), named
// strategy=<name>/targets=<T>/n=<n>.
func runGrid(b *testing.B, bench func(b *testing.B, f strategy.Factory, T, n int)) {
	b.Helper()
	for _, f := range factories() {
		for _, T := range benchTargets {
			for _, n := range benchCollectors {
				b.Run(fmt.Sprintf("strategy=%s/targets=%d/n=%d", f.Name, T, n), func(b *testing.B) { bench(b, f, T, n) })
			}
		}
	}
}

func owners(s strategy.Strategy, js map[string][]*allocation.Target) map[uint64]string {
	out := map[uint64]string{}
	for _, ts := range js {
		for _, t := range ts {
			if c, ok := s.Owner(t.Hash); ok {
				out[t.Hash] = c
			}
		}
	}
	return out
}
