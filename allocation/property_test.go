package allocation

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// genState draws a target set and a collector set.
func genState(t *rapid.T) (map[string][]*Target, []Collector) {
	targets := makeTargets(rapid.IntRange(0, 2000).Draw(t, "targets"), rapid.IntRange(1, 8).Draw(t, "jobs"), rapid.StringN(1, 4, 4).Draw(t, "seed"))
	return targets, makeCollectors(rapid.IntRange(0, 40).Draw(t, "collectors"))
}

func TestPropertyConsistentHashing(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		targets, collectors := genState(t)
		eps := rapid.SampledFrom([]float64{0.01, 0.05, 0.2}).Draw(t, "eps")
		a := mustNew(t, Options{Epsilon: eps})
		a.SetCollectors(collectors)
		a.SetJobTargets(targets)
		s := a.Snapshot()
		total := s.Targets()

		// Every target exactly once, within the cap.
		assigned := 0
		for _, l := range s.Loads() {
			require.LessOrEqual(t, l, capacity(total, len(collectors), eps))
			assigned += l
		}
		if len(collectors) > 0 {
			require.Equal(t, total, assigned)
		} else {
			require.Len(t, s.Unassigned(), total)
		}

		// Determinism: shuffled collectors, targets before collectors.
		shuffled := slices.Clone(collectors)
		rng := rand.New(rand.NewPCG(uint64(len(shuffled)), 9))
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		b := mustNew(t, Options{Epsilon: eps})
		b.SetJobTargets(targets)
		b.SetCollectors(shuffled)
		require.Equal(t, assignment(s), assignment(b.Snapshot()))

		// Movement: a leave moves at least the leaver's targets, and the
		// accounting matches an independent count.
		if len(collectors) > 1 {
			gone := rapid.IntRange(0, len(collectors)-1).Draw(t, "gone")
			held := s.Load(collectors[gone].Name)
			res := a.SetCollectors(slices.Delete(slices.Clone(collectors), gone, gone+1))
			require.GreaterOrEqual(t, res.Moved, held)
			require.GreaterOrEqual(t, res.Moved, res.Min)
			require.Equal(t, moved(assignment(s), assignment(a.Snapshot())), res.Moved)
			// Rejoin restores the assignment exactly.
			a.SetCollectors(collectors)
			require.Equal(t, assignment(s), assignment(a.Snapshot()))
		}
	})
}

func TestPropertyStrategiesAssignOnce(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		targets, collectors := genState(t)
		strategy := rapid.SampledFrom([]string{LeastWeighted, PerNode}).Draw(t, "strategy")
		opts := Options{Strategy: strategy}
		if strategy == PerNode {
			opts.FallbackStrategy = rapid.SampledFrom([]string{"", ConsistentHashing, LeastWeighted}).Draw(t, "fallback")
			nodes := rapid.IntRange(1, 5).Draw(t, "nodes")
			for i := range collectors {
				collectors[i].Node = "node-" + strconv.Itoa(i%nodes)
			}
			for _, ts := range targets {
				for i, tg := range ts {
					if i%3 != 0 {
						tg.Node = "node-" + strconv.Itoa(i%(nodes+1))
					}
				}
			}
		}
		a := mustNew(t, opts)
		a.SetCollectors(collectors)
		res := a.SetJobTargets(targets)
		s := a.Snapshot()
		assigned := 0
		for _, l := range s.Loads() {
			assigned += l
		}
		require.Equal(t, s.Targets(), assigned+len(s.Unassigned()))
		require.Len(t, s.Unassigned(), res.Unassigned)
		if len(collectors) > 0 && (strategy == LeastWeighted || opts.FallbackStrategy != "") {
			require.Empty(t, s.Unassigned())
		}
		if strategy == PerNode {
			node := map[string]string{}
			for _, c := range collectors {
				node[c.Name] = c.Node
			}
			for _, ts := range targets {
				for _, tg := range ts {
					c, ok := s.Lookup(tg.Hash)
					if ok && tg.Node != "" && slices.ContainsFunc(collectors, func(c Collector) bool { return c.Node == tg.Node }) {
						require.Equal(t, tg.Node, node[c], "a target with a collector on its node stays on its node")
					}
				}
			}
		}
	})
}
