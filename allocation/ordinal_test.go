package allocation

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestStatefulOrdinals(t *testing.T) {
	for _, tc := range []struct {
		names   []string
		ords    []int
		buckets int
	}{
		{names: []string{"col-0", "col-1", "col-2"}, ords: []int{0, 1, 2}, buckets: 3},
		{names: []string{"a-b-collector-3", "a-b-collector-10"}, ords: []int{3, 10}, buckets: 11},
		{names: []string{"col-0", "other-1"}},                           // two prefixes
		{names: []string{"col-01"}},                                     // not canonical
		{names: []string{"col-x"}},                                      // not a number
		{names: []string{"-1"}},                                         // no prefix
		{names: []string{"col"}},                                        // no ordinal
		{names: []string{"col-1024"}},                                   // beyond maxOrdinal
		{names: []string{"collector-7d9f8-x2kq"}},                       // a Deployment's pod
		{names: []string{"col-+1"}},                                     // a sign
		{names: nil},                                                    // nothing
		{names: []string{"col-1023"}, ords: []int{1023}, buckets: 1024}, // the last allowed
	} {
		cs := make([]Collector, len(tc.names))
		for i, n := range tc.names {
			cs[i] = Collector{Name: n}
		}
		ords, buckets, ok := statefulOrdinals(cs)
		if ok != (tc.ords != nil) || !slices.Equal(ords, tc.ords) || buckets != tc.buckets {
			t.Errorf("statefulOrdinals(%q) = %v, %d, %v; want %v, %d", tc.names, ords, buckets, ok, tc.ords, tc.buckets)
		}
	}
}

func randomHashes(n int, seed uint64) []uint64 {
	r := rand.New(rand.NewPCG(seed, 1))
	hs := make([]uint64, n)
	for i := range hs {
		hs[i] = r.Uint64()
	}
	return hs
}

// paretoWeights draws n weights from a Pareto distribution (α = 1.2,
// minimum 50), capped at 50,000.
func paretoWeights(n int, seed uint64) []uint32 {
	r := rand.New(rand.NewPCG(seed, 2))
	ws := make([]uint32, n)
	for i := range ws {
		ws[i] = uint32(min(50000, 50/math.Pow(1-r.Float64(), 1/1.2)))
	}
	return ws
}

// TestNestIsNested checks the two promises of the nested shares at every
// step of a StatefulSet scaling from 1 to 40 pods: going from m to m+1
// buckets moves only the targets that end in bucket m, and every bucket
// holds the mean rounded (by count) or within one target's weight of it.
func TestNestIsNested(t *testing.T) {
	for _, tc := range []struct {
		name    string
		targets int
		weights bool
	}{{"counts 997", 997, false}, {"counts 10000", 10000, false}, {"pareto 5000", 5000, true}} {
		t.Run(tc.name, func(t *testing.T) {
			hashes := randomHashes(tc.targets, 1)
			var weights []uint32
			maxW := uint64(1)
			if tc.weights {
				weights = paretoWeights(tc.targets, 1)
				maxW = uint64(slices.Max(weights))
			}
			prev, _ := nest(hashes, weights, 1)
			for m := 2; m <= 40; m++ {
				got, loads := nest(hashes, weights, m)
				for i := range got {
					if got[i] != prev[i] && got[i] != int32(m-1) {
						t.Fatalf("m=%d: target %d moved from bucket %d to %d, not to the new bucket %d", m, i, prev[i], got[i], m-1)
					}
				}
				var total uint64
				for i := range got {
					total += uint64(weightAt(weights, int32(i)))
				}
				check := make([]uint64, m)
				for i, b := range got {
					check[b] += uint64(weightAt(weights, int32(i)))
				}
				if !slices.Equal(check, loads) {
					t.Fatalf("m=%d: loads %v, recount %v", m, loads, check)
				}
				lo, hi := slices.Min(loads), slices.Max(loads)
				mean := float64(total) / float64(m)
				if !tc.weights && hi-lo > 1 {
					t.Fatalf("m=%d: loads from %d to %d, want within one of each other", m, lo, hi)
				}
				if tc.weights && (float64(hi) > mean+float64(maxW) || float64(lo) < mean-float64(maxW)) {
					t.Fatalf("m=%d: loads from %d to %d around mean %.0f, want within the heaviest target (%d)", m, lo, hi, mean, maxW)
				}
				prev = got
			}
		})
	}
}

// TestNestOrderFree checks that the result depends on the targets, not on
// the order they are given in.
func TestNestOrderFree(t *testing.T) {
	hashes := randomHashes(3000, 2)
	weights := paretoWeights(3000, 2)
	for _, ws := range [][]uint32{nil, weights} {
		want, _ := nest(hashes, ws, 17)
		perm := rand.New(rand.NewPCG(3, 3)).Perm(len(hashes))
		h2 := make([]uint64, len(hashes))
		var w2 []uint32
		if ws != nil {
			w2 = make([]uint32, len(ws))
		}
		for i, p := range perm {
			h2[p] = hashes[i]
			if ws != nil {
				w2[p] = ws[i]
			}
		}
		got, _ := nest(h2, w2, 17)
		for i, p := range perm {
			if got[p] != want[i] {
				t.Fatalf("weights %v: target %d in bucket %d, %d after shuffling", ws != nil, i, want[i], got[p])
			}
		}
	}
}

// TestOrdinalStrategy drives the strategy through the allocator: a
// scale-up and scale-down move exactly the minimum, a pod missing from the
// middle (restarting) moves only its own targets and gets them back, and
// collectors that are not a StatefulSet's pods fall back to consistent
// hashing.
func TestOrdinalStrategy(t *testing.T) {
	a := mustNew(t, Options{Strategy: Ordinal})
	a.SetJobTargets(makeTargets(10000, 50, "o"))
	ten, eleven := makeCollectors(10), makeCollectors(11)
	a.SetCollectors(ten)
	before := assignment(a.Snapshot())
	if b := a.Snapshot().Balance(); b > 1.001 {
		t.Errorf("balance %.4f, want the mean rounded (1.000)", b)
	}
	join := a.SetCollectors(eleven)
	if join.Moved != join.Min || join.Min != 10000/11 {
		t.Errorf("join moved %d, min %d; want both %d", join.Moved, join.Min, 10000/11)
	}
	leave := a.SetCollectors(ten)
	if leave.Moved != leave.Min || !maps.Equal(assignment(a.Snapshot()), before) {
		t.Errorf("leave moved %d (min %d) and the assignment is back to before: %v", leave.Moved, leave.Min, maps.Equal(assignment(a.Snapshot()), before))
	}

	// collector-3 restarting: drained, then back.
	drained := slices.Clone(ten)
	drained[3].Draining = true
	out := a.SetCollectors(drained)
	mid := assignment(a.Snapshot())
	held := 0
	for h, c := range before {
		if c == "collector-3" {
			held++
			continue
		}
		if mid[h] != c {
			t.Fatalf("target %x moved from %s to %s while collector-3 was away", h, c, mid[h])
		}
	}
	if out.Moved != held {
		t.Errorf("drain moved %d, collector-3 held %d", out.Moved, held)
	}
	if b := a.Snapshot().Balance(); b > 1.01 {
		t.Errorf("balance %.4f with collector-3 away, want within one target", b)
	}
	if back := a.SetCollectors(ten); back.Moved != held || !maps.Equal(assignment(a.Snapshot()), before) {
		t.Errorf("collector-3 back: moved %d (want %d), assignment as before: %v", back.Moved, held, maps.Equal(assignment(a.Snapshot()), before))
	}

	// Not a StatefulSet: consistent hashing's assignment.
	names := []Collector{{Name: "alpha"}, {Name: "beta"}, {Name: "gamma"}}
	ch, o := mustNew(t, Options{}), mustNew(t, Options{Strategy: Ordinal})
	for _, x := range []*Allocator{ch, o} {
		x.SetJobTargets(makeTargets(2000, 5, "f"))
		x.SetCollectors(names)
	}
	if !maps.Equal(assignment(o.Snapshot()), assignment(ch.Snapshot())) {
		t.Error("collectors without ordinals: assignment differs from consistent-hashing's")
	}
}

// TestOrdinalReplicas checks that two allocators agree whatever the history
// that led them to the same targets and collectors (two replicas, or one
// before and after a restart).
func TestOrdinalReplicas(t *testing.T) {
	x := mustNew(t, Options{Strategy: Ordinal})
	y := mustNew(t, Options{Strategy: Ordinal})
	x.SetCollectors(makeCollectors(4))
	x.SetJobTargets(makeTargets(3000, 7, "r"))
	x.SetCollectors(makeCollectors(9))
	x.SetJobTargets(makeTargets(5000, 7, "r"))
	x.SetCollectors(makeCollectors(6))

	y.SetJobTargets(makeTargets(5000, 7, "r"))
	y.SetCollectors(makeCollectors(6))
	if !maps.Equal(assignment(x.Snapshot()), assignment(y.Snapshot())) {
		t.Error("two allocators with the same targets and collectors disagree")
	}
}
