package allocation

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// paretoTargets are makeTargets with heavy-tailed weights: Pareto with
// α = 1.2 and minimum 50 samples, capped at 50,000 (one target in a few
// thousand is a thousand times the lightest).
func paretoTargets(n, jobs int, seed uint64) map[string][]*Target {
	rng := rand.New(rand.NewPCG(seed, 12))
	out := makeTargets(n, jobs, "weights")
	for _, job := range slices.Sorted(mapKeysOf(out)) {
		for _, t := range out[job] {
			w := 50 / math.Pow(1-rng.Float64(), 1/1.2)
			t.Weight = uint32(min(w, 50_000))
		}
	}
	return out
}

func mapKeysOf[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// weightLoads returns the weight each collector holds, in Collectors order.
func weightLoads(s *Snapshot) []uint64 {
	loads := make([]uint64, len(s.Collectors()))
	for c, name := range s.Collectors() {
		for _, job := range s.Jobs() {
			if sl := s.Slice(name, job); sl != nil {
				for _, t := range sl.Targets {
					loads[c] += uint64(max(t.Weight, 1))
				}
			}
		}
	}
	return loads
}

func maxMean(loads []uint64) float64 {
	var total, top uint64
	for _, l := range loads {
		total += l
		top = max(top, l)
	}
	return float64(top) / (float64(total) / float64(len(loads)))
}

// movedWeight sums the weight of the targets whose collector changed.
func movedWeight(before, after map[uint64]string, weight map[uint64]uint32) uint64 {
	var w uint64
	for h, c := range before {
		if a, ok := after[h]; ok && c != "" && a != c {
			w += uint64(max(weight[h], 1))
		}
	}
	return w
}

// TestWeightedBound: with weights no collector holds more than (1+ε) times
// the mean weight plus one target's weight, every target is assigned once,
// and the result does not depend on the order the jobs arrive in.
func TestWeightedBound(t *testing.T) {
	t.Parallel()
	jobs := paretoTargets(5000, 5, 1)
	var weights []uint32
	for _, ts := range jobs {
		for _, tg := range ts {
			weights = append(weights, tg.Weight)
		}
	}
	a := mustNew(t, Options{Strategy: ConsistentHashing})
	a.SetCollectors(makeCollectors(20))
	a.SetJobTargets(jobs)
	s := a.Snapshot()
	require.Empty(t, s.Unassigned())
	require.Equal(t, 5000, s.Targets())
	capa := weightedCapacity(weights, 20, DefaultEpsilon) // (1+ε)·mean + the heaviest
	for _, l := range weightLoads(s) {
		require.LessOrEqual(t, l, capa)
	}

	b := mustNew(t, Options{Strategy: ConsistentHashing})
	for _, job := range slices.Sorted(mapKeysOf(jobs)) {
		b.SetJobTargets(map[string][]*Target{job: jobs[job]})
	}
	b.SetCollectors(makeCollectors(20))
	require.Equal(t, assignment(s), assignment(b.Snapshot()), "a pure function of targets and collectors")
}

// BenchmarkWeighted: 10k Pareto-weighted targets over 30 collectors, the
// busiest collector's weight over the mean (with weights and, for
// comparison, by count alone), and the weight moved by a join and a leave
// over the least any assignment moves (the joiner's share of the weight; the
// leaver's weight), for consistent-hashing and ordinal.
func BenchmarkWeighted(b *testing.B) {
	jobs := paretoTargets(10_000, 10, 1)
	weight := map[uint64]uint32{}
	var total uint64
	for _, ts := range jobs {
		for _, t := range ts {
			weight[t.Hash] = t.Weight
			total += uint64(t.Weight)
		}
	}
	const n = 30
	unweighted := map[string][]*Target{}
	for job, ts := range jobs {
		for _, t := range ts {
			c := *t
			c.Weight = 0
			unweighted[job] = append(unweighted[job], &c)
		}
	}
	counts := mustNew(b, Options{Strategy: ConsistentHashing})
	counts.SetCollectors(makeCollectors(n))
	counts.SetJobTargets(unweighted)
	byCount := counts.Snapshot().source()
	// The count assignment, weighed.
	countLoads := make([]uint64, n)
	for c, name := range byCount.Collectors() {
		for _, job := range byCount.Jobs() {
			if sl := byCount.Slice(name, job); sl != nil {
				for _, t := range sl.Targets {
					countLoads[c] += uint64(weight[t.Hash])
				}
			}
		}
	}
	b.Run("consistent-hashing", func(b *testing.B) { benchWeighted(b, ConsistentHashing, jobs, weight, total, countLoads) })
	b.Run("ordinal", func(b *testing.B) { benchWeighted(b, Ordinal, jobs, weight, total, countLoads) })
}

func benchWeighted(b *testing.B, strategy string, jobs map[string][]*Target, weight map[uint64]uint32, total uint64, countLoads []uint64) {
	const n = 30
	var balance, join, leave float64
	for b.Loop() {
		a := mustNew(b, Options{Strategy: strategy})
		a.SetCollectors(makeCollectors(n))
		a.SetJobTargets(jobs)
		before := assignment(a.Snapshot())
		balance = maxMean(weightLoads(a.Snapshot()))
		a.SetCollectors(makeCollectors(n + 1))
		after := assignment(a.Snapshot())
		join = float64(movedWeight(before, after, weight)) / (float64(total) / float64(n+1))
		var leaverWeight uint64
		for h, c := range after {
			if c == "collector-"+itoa(n) {
				leaverWeight += uint64(weight[h])
			}
		}
		a.SetCollectors(makeCollectors(n))
		leave = float64(movedWeight(after, assignment(a.Snapshot()), weight)) / float64(leaverWeight)
	}
	b.ReportMetric(balance, "max/mean")
	b.ReportMetric(maxMean(countLoads), "max/mean-by-count")
	b.ReportMetric(join, "moved/optimal-join")
	b.ReportMetric(leave, "moved/optimal-leave")
}

func itoa(i int) string { return string(rune('0'+i/10)) + string(rune('0'+i%10)) }
