package allocation

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

func TestNewValidatesOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		opts    Options
		wantErr error
		errText string
	}{
		{name: "defaults", opts: Options{}},
		{name: "unknown strategy", opts: Options{Strategy: "round-robin"}, wantErr: ErrUnknownStrategy, errText: `"round-robin"`},
		{name: "unknown fallback", opts: Options{Strategy: PerNode, FallbackStrategy: "x"}, wantErr: ErrUnknownStrategy, errText: `"x"`},
		// The OpenTelemetry Operator writes allocation_fallback_strategy:
		// consistent-hashing whatever the strategy; only per-node uses it.
		{name: "fallback ignored without per-node", opts: Options{Strategy: LeastWeighted, FallbackStrategy: ConsistentHashing}},
		{name: "fallback ignored with consistent-hashing", opts: Options{Strategy: ConsistentHashing, FallbackStrategy: ConsistentHashing}},
		{name: "unknown fallback without per-node", opts: Options{Strategy: ConsistentHashing, FallbackStrategy: "consistent-hash"}, wantErr: ErrUnknownStrategy, errText: `"consistent-hash"`},
		{name: "negative epsilon", opts: Options{Epsilon: -1}, errText: "epsilon"},
		{name: "per-node with fallback", opts: Options{Strategy: PerNode, FallbackStrategy: LeastWeighted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := New(tc.opts)
			if tc.errText == "" {
				require.NoError(t, err)
				require.NotNil(t, a.Snapshot())
				return
			}
			require.ErrorContains(t, err, tc.errText)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			}
		})
	}
	a := mustNew(t, Options{})
	require.Equal(t, ConsistentHashing, a.Options().Strategy)
	require.InDelta(t, DefaultEpsilon, a.Options().Epsilon, 0)
}

// checkExactlyOnce asserts that every target is assigned to exactly one known
// collector and that the snapshot's views agree with each other.
func checkExactlyOnce(t *testing.T, s *Snapshot, want int) {
	t.Helper()
	seen := map[uint64]string{}
	total := 0
	for _, c := range s.Collectors() {
		load := 0
		for _, j := range s.Jobs() {
			sl := s.Slice(c, j)
			if sl == nil {
				continue
			}
			require.True(t, slices.IsSortedFunc(sl.Targets, func(x, y *Target) int {
				if x.Address != y.Address {
					if x.Address < y.Address {
						return -1
					}
					return 1
				}
				return 0
			}), "slice %s/%s must be in address order", c, j)
			for _, tg := range sl.Targets {
				require.Equal(t, j, tg.Job)
				prev, dup := seen[tg.Hash]
				require.False(t, dup, "target %x on %s and %s", tg.Hash, prev, c)
				seen[tg.Hash] = c
				got, ok := s.Lookup(tg.Hash)
				require.True(t, ok)
				require.Equal(t, c, got)
			}
			load += len(sl.Targets)
		}
		require.Equal(t, load, s.Load(c))
		total += load
	}
	require.Equal(t, want, total+len(s.Unassigned()))
	require.Equal(t, want, s.Targets())
}

func TestEveryTargetAssignedOnceWithinCap(t *testing.T) {
	t.Parallel()
	for _, strategy := range []string{ConsistentHashing, LeastWeighted} {
		for _, n := range []int{1, 2, 3, 10, 30} {
			for _, targets := range []int{0, 1, 7, 1000, 5000} {
				t.Run(strategy+"/n="+strconv.Itoa(n)+"/t="+strconv.Itoa(targets), func(t *testing.T) {
					t.Parallel()
					a := mustNew(t, Options{Strategy: strategy})
					a.SetCollectors(makeCollectors(n))
					res := a.SetJobTargets(makeTargets(targets, 7, "x"))
					require.Equal(t, targets, res.Targets)
					require.Zero(t, res.Unassigned)
					s := a.Snapshot()
					checkExactlyOnce(t, s, targets)
					require.Empty(t, s.Unassigned())
					limit := capacity(targets, n, DefaultEpsilon)
					if strategy == LeastWeighted {
						limit = (targets + n - 1) / n
					}
					for _, l := range s.Loads() {
						require.LessOrEqual(t, l, limit)
					}
				})
			}
		}
	}
}

func TestCapacity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		targets, n int
		eps        float64
		want       int
	}{
		{10000, 100, 0.05, 105}, // 1.05*100 is 105.00000000000001 in floating point
		{100000, 100, 0.05, 1050},
		{10000, 101, 0.05, 104},
		{10, 3, 0.05, 4},
		{1, 3, 0.05, 1},
		{0, 3, 0.05, 0},
		{5, 0, 0.05, 0},
		{100, 10, 0, 10},
	} {
		require.Equal(t, tc.want, capacity(tc.targets, tc.n, tc.eps), "%+v", tc)
	}
}

// TestDeterministic feeds the same final state in different orders and
// histories: the assignment must be identical.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	targets := makeTargets(3000, 5, "d")
	collectors := makeCollectors(13)

	a := mustNew(t, Options{})
	a.SetCollectors(collectors)
	a.SetJobTargets(targets)

	// Targets first, jobs one at a time, shuffled slices, collectors reversed
	// and arriving one by one with a detour through an extra collector.
	b := mustNew(t, Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	for job, ts := range targets {
		sh := slices.Clone(ts)
		rng.Shuffle(len(sh), func(i, j int) { sh[i], sh[j] = sh[j], sh[i] })
		b.SetJobTargets(map[string][]*Target{job: sh})
	}
	rev := slices.Clone(collectors)
	slices.Reverse(rev)
	for i := range rev {
		b.SetCollectors(rev[:i+1])
	}
	b.SetCollectors(append(slices.Clone(rev), Collector{Name: "extra"}))
	b.SetCollectors(rev)

	require.Equal(t, assignment(a.Snapshot()), assignment(b.Snapshot()))
}

func TestIncrementalEqualsFullRecompute(t *testing.T) {
	t.Parallel()
	for _, strategy := range []string{ConsistentHashing, PerNode} {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			opts := Options{Strategy: strategy}
			if strategy == PerNode {
				opts.FallbackStrategy = ConsistentHashing
			}
			inc := mustNew(t, opts)
			rng := rand.New(rand.NewPCG(3, 4))
			state := map[string][]*Target{}
			collectors := makeCollectors(8)
			inc.SetCollectors(collectors)
			for step := range 60 {
				switch rng.IntN(3) {
				case 0: // replace a job
					job := "job-" + strconv.Itoa(rng.IntN(6))
					ts := makeTargets(rng.IntN(400), 1, "s"+strconv.Itoa(step))["job-0"]
					for _, tg := range ts {
						tg.Job = job
						tg.Hash ^= uint64(len(job)) << 7
					}
					state[job] = ts
					inc.SetJobTargets(map[string][]*Target{job: ts})
				case 1: // change collectors
					collectors = makeCollectors(1 + rng.IntN(12))
					inc.SetCollectors(collectors)
				default: // remove a job
					job := "job-" + strconv.Itoa(rng.IntN(6))
					delete(state, job)
					inc.SetJobTargets(map[string][]*Target{job: nil})
				}
				full := mustNew(t, opts)
				full.SetJobTargets(state)
				full.SetCollectors(collectors)
				require.Equal(t, assignment(full.Snapshot()), assignment(inc.Snapshot()), "step %d", step)
			}
		})
	}
}

func TestZeroCollectorsKeepsTargets(t *testing.T) {
	t.Parallel()
	a := mustNew(t, Options{})
	res := a.SetJobTargets(makeTargets(100, 2, "z"))
	require.Equal(t, 100, res.Unassigned)
	require.Len(t, a.Snapshot().Unassigned(), 100)

	res = a.SetCollectors(makeCollectors(2))
	require.Zero(t, res.Unassigned)
	require.Zero(t, res.Moved, "assigning a target that had no collector is not a move")
	checkExactlyOnce(t, a.Snapshot(), 100)

	res = a.SetCollectors(nil)
	require.Equal(t, 100, res.Unassigned)
	require.Equal(t, 100, res.Moved, "targets that lose their collector moved")
	require.Equal(t, 100, res.Min)
	require.Equal(t, 100, a.Snapshot().Targets())
}

func TestRollingRestartEndsIdentical(t *testing.T) {
	t.Parallel()
	a := mustNew(t, Options{})
	cs := makeCollectors(10)
	a.SetCollectors(cs)
	a.SetJobTargets(makeTargets(10000, 10, "r"))
	before := assignment(a.Snapshot())
	for i := range cs {
		rest := slices.Delete(slices.Clone(cs), i, i+1)
		res := a.SetCollectors(rest)
		require.GreaterOrEqual(t, res.Moved, res.Min)
		a.SetCollectors(cs)
	}
	require.Equal(t, before, assignment(a.Snapshot()))
}

func TestMovementOnJoinAndLeave(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		targets, n int
		maxRatio   float64
	}{
		{10000, 3, 1.10},
		{10000, 10, 1.10},
		{10000, 30, 1.10},
		{100000, 100, 1.10},
	} {
		t.Run(strconv.Itoa(tc.targets)+"/"+strconv.Itoa(tc.n), func(t *testing.T) {
			t.Parallel()
			a := mustNew(t, Options{})
			a.SetJobTargets(makeTargets(tc.targets, 20, "m"))
			a.SetCollectors(makeCollectors(tc.n))
			join := a.SetCollectors(makeCollectors(tc.n + 1))
			optimal := tc.targets / (tc.n + 1)
			require.Equal(t, optimal, join.Min)
			require.LessOrEqual(t, float64(join.Moved), tc.maxRatio*float64(optimal))
			held := a.Snapshot().Load(makeCollectors(tc.n + 1)[tc.n].Name)
			leave := a.SetCollectors(makeCollectors(tc.n))
			require.GreaterOrEqual(t, leave.Min, held)
			require.LessOrEqual(t, float64(leave.Moved), tc.maxRatio*float64(held))
		})
	}
}

func TestTargetChurnMovesFewOthers(t *testing.T) {
	t.Parallel()
	a := mustNew(t, Options{})
	a.SetCollectors(makeCollectors(10))
	all := makeTargets(10000, 1, "c")["job-0"]
	a.SetJobTargets(map[string][]*Target{"job-0": all})
	before := assignment(a.Snapshot())
	// Replace 1% of the targets.
	next := slices.Clone(all[100:])
	next = append(next, makeTargets(100, 1, "new")["job-0"]...)
	a.SetJobTargets(map[string][]*Target{"job-0": next})
	require.LessOrEqual(t, moved(before, assignment(a.Snapshot())), 50, "at most 0.5%% of the others move")
}

func TestPerNode(t *testing.T) {
	t.Parallel()
	node := func(addr, n string) *Target {
		lbls := labels.FromStrings("__address__", addr, "__meta_kubernetes_pod_node_name", n)
		return &Target{Job: "j", Hash: lbls.Hash(), Address: addr, Labels: DiscoveredOf(lbls), Node: n}
	}
	targets := []*Target{node("a:1", "n1"), node("b:1", "n2"), node("c:1", "n3"), node("d:1", ""), node("e:2", "n1")}
	collectors := []Collector{{Name: "c1", Node: "n1"}, {Name: "c2", Node: "n2"}, {Name: "c3", Node: "n2"}}

	for _, tc := range []struct {
		fallback   string
		unassigned int
	}{{"", 2}, {ConsistentHashing, 0}, {LeastWeighted, 0}} {
		t.Run("fallback="+tc.fallback, func(t *testing.T) {
			t.Parallel()
			a := mustNew(t, Options{Strategy: PerNode, FallbackStrategy: tc.fallback})
			a.SetCollectors(collectors)
			res := a.SetJobTargets(map[string][]*Target{"j": targets})
			require.Equal(t, tc.unassigned, res.Unassigned)
			s := a.Snapshot()
			checkExactlyOnce(t, s, len(targets))
			for _, tg := range targets[:2] {
				c, ok := s.Lookup(tg.Hash)
				require.True(t, ok)
				want := map[string][]string{"n1": {"c1"}, "n2": {"c2", "c3"}}[tg.Node]
				require.Contains(t, want, c, "target on %s", tg.Node)
			}
			c, _ := s.Lookup(targets[4].Hash)
			require.Equal(t, "c1", c)
		})
	}
}

func TestLeastWeightedFillsJoiner(t *testing.T) {
	t.Parallel()
	a := mustNew(t, Options{Strategy: LeastWeighted})
	a.SetCollectors(makeCollectors(3))
	a.SetJobTargets(makeTargets(900, 3, "l"))
	require.Equal(t, []int{300, 300, 300}, a.Snapshot().Loads())
	res := a.SetCollectors(makeCollectors(4))
	require.Equal(t, 225, a.Snapshot().Load("collector-3"), "the new collector gets its share")
	require.Equal(t, 225, res.Moved, "and nothing else moves")
	require.Equal(t, 225, res.Min)
	// Sticky: a collector leaving moves only its targets.
	res = a.SetCollectors(makeCollectors(3))
	require.Equal(t, 225, res.Moved)
	require.Equal(t, []int{300, 300, 300}, a.Snapshot().Loads())
}

func TestSliceVersionsSurviveUnrelatedUpdates(t *testing.T) {
	t.Parallel()
	// A loose bound, so that adding targets cannot spill others.
	a := mustNew(t, Options{Epsilon: 1})
	a.SetCollectors(makeCollectors(3))
	a.SetJobTargets(makeTargets(300, 3, "v"))
	s1 := a.Snapshot()
	a.SetJobTargets(map[string][]*Target{"job-9": makeTargets(5, 1, "other")["job-0"]})
	s2 := a.Snapshot()
	require.Greater(t, s2.Generation(), s1.Generation())
	for _, c := range s1.Collectors() {
		for _, j := range s1.Jobs() {
			require.Same(t, s1.Slice(c, j), s2.Slice(c, j), "%s/%s unchanged", c, j)
		}
	}
	// New labels for one target: a new Target value with the same identity.
	tg := *s1.Slice("collector-0", "job-0").Targets[0]
	tg.Labels = discovered("__address__", tg.Address, "extra", "1")
	ts := slices.Clone(makeTargets(300, 3, "v")["job-0"])
	for i := range ts {
		if ts[i].Hash == tg.Hash {
			ts[i] = &tg
		}
	}
	a.SetJobTargets(map[string][]*Target{"job-0": ts})
	s3 := a.Snapshot()
	require.NotEqual(t, s2.Slice("collector-0", "job-0").Version, s3.Slice("collector-0", "job-0").Version)
	require.Same(t, s2.Slice("collector-1", "job-1"), s3.Slice("collector-1", "job-1"))
	require.Nil(t, s3.Slice("nope", "job-0"))
	require.Nil(t, s3.Slice("collector-0", "nope"))
}

func TestDuplicateIdentityNewestWins(t *testing.T) {
	t.Parallel()
	a := mustNew(t, Options{})
	a.SetCollectors(makeCollectors(1))
	old := &Target{Job: "j", Hash: 1, Address: "a:1"}
	newer := &Target{Job: "j", Hash: 1, Address: "a:1", Labels: discovered("v", "2")}
	a.SetJobTargets(map[string][]*Target{"j": {old, newer}})
	sl := a.Snapshot().Slice("collector-0", "j")
	require.Len(t, sl.Targets, 1)
	require.Same(t, newer, sl.Targets[0])
}

func TestSnapshotIsImmutable(t *testing.T) {
	t.Parallel()
	a := mustNew(t, Options{})
	a.SetCollectors(makeCollectors(2))
	a.SetJobTargets(makeTargets(50, 1, "i"))
	s := a.Snapshot()
	before := assignment(s)
	loads := s.Loads()
	a.SetCollectors(makeCollectors(5))
	a.SetJobTargets(map[string][]*Target{"job-0": nil})
	require.Equal(t, before, assignment(s))
	require.Equal(t, loads, s.Loads())
	require.Len(t, s.History(), 3)
	require.Zero(t, a.Snapshot().Targets())
}

func TestHashOrder(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 100, 1 << 12, 50_000} {
		r := rand.New(rand.NewPCG(uint64(n), 7))
		hashes := make([]uint64, n)
		for i := range hashes {
			hashes[i] = r.Uint64()
			if i%10 == 3 {
				hashes[i] = hashes[i-1] // equal hashes too
			}
		}
		got := hashOrder(hashes)
		require.Len(t, got, n)
		seen := make([]bool, n)
		for k, i := range got {
			require.False(t, seen[i], "index %d twice", i)
			seen[i] = true
			if k > 0 {
				require.LessOrEqual(t, hashes[got[k-1]], hashes[i], "n=%d, position %d", n, k)
			}
		}
	}
}
