package allocation

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The ordinal strategy: nested balanced shares over StatefulSet ordinals.
//
// A StatefulSet scales by adding the next ordinal or removing the last one,
// so the collector sets it goes through are nested: {0}, {0,1}, {0,1,2}...
// The assignment for m ordinals is defined by recursion over that chain.
// With one ordinal every target is in bucket 0. Going from n to n+1 ordinals,
// bucket n is filled from every existing bucket, each handing on its targets
// of highest score for that level (a hash of the target identity and n, so
// which targets go is independent from level to level). By count, each
// existing bucket keeps ⌊T/(n+1)⌋ or, the most loaded first, one more, and
// the newcomer gets ⌊T/(n+1)⌋; by weight, each hands on what keeps it at or
// above the new mean W/(n+1), then, while the newcomer is short of the mean,
// the most loaded hand on one more each. Ties between buckets of equal load
// go by a per-level hash of the bucket, so the buckets that round down differ
// from level to level.
//
// What this buys: the assignment for n+1 ordinals differs from the one for n
// only in the targets of bucket n, so a scale-up moves exactly what the new
// collector takes and a scale-down exactly what the removed one held, the
// minimum either step allows, while every collector holds the mean rounded
// up or down (in weight: within one target's weight of it). Consistent
// hashing with bounded loads cannot do both: a third of its collectors sit at
// the load cap and the cap moves with every scale step (benchmarks/README.md).
// The assignment is still a pure function of the targets and the ordinals, so
// replicas and restarts agree.
//
// What it costs: a target added or removed changes a bucket's content at
// some level, and with it which target that bucket hands on there, and the
// difference carries down the later levels; so target churn moves other
// targets too, more the more collectors and the fewer targets each (the
// stability benchmark's churn column: 9.8 per replaced target at 10k targets
// over 100 collectors, 0.03 at 100k over 3). Each level scores every target,
// O(T·m) for m ordinals, which is why m is bounded by maxOrdinal.
//
// A collector missing from the middle of the chain (a pod restarting, drained
// by the handoff) is covered by the others: its targets go, in hash order, to
// the least-loaded present collector, and come back when it returns. Only the
// missing collector's targets move either way. Collectors whose names are not
// one StatefulSet's pods (<prefix>-<ordinal>, one prefix) are assigned by
// consistent hashing instead.

// maxOrdinal bounds the highest ordinal the ordinal strategy nests over.
const maxOrdinal = 1024

// statefulOrdinals returns the ordinal of each collector when all of them are
// named <prefix>-<ordinal> with one prefix and a canonical decimal ordinal
// below maxOrdinal, and the number of buckets (highest ordinal + 1).
func statefulOrdinals(cs []Collector) (ords []int, buckets int, ok bool) {
	if len(cs) == 0 {
		return nil, 0, false
	}
	ords = make([]int, len(cs))
	var prefix string
	for i, c := range cs {
		k := strings.LastIndexByte(c.Name, '-')
		if k <= 0 {
			return nil, 0, false
		}
		digits := c.Name[k+1:]
		n, err := strconv.Atoi(digits)
		if err != nil || n < 0 || n >= maxOrdinal || strconv.Itoa(n) != digits {
			return nil, 0, false
		}
		if i == 0 {
			prefix = c.Name[:k]
		} else if c.Name[:k] != prefix {
			return nil, 0, false
		}
		ords[i] = n
		buckets = max(buckets, n+1)
	}
	return ords, buckets, true
}

// ordinal assigns every target by nested balanced shares, or by consistent
// hashing when the collectors are not one StatefulSet's pods.
func ordinal(w *work) []int32 {
	ords, m, ok := statefulOrdinals(w.collectors)
	if !ok {
		return consistent(w, nil)
	}
	bucket, loads := nest(w.hashes, w.weights, m)
	owner := make([]int32, m)
	for b := range owner {
		owner[b] = -1
	}
	for c, o := range ords {
		owner[o] = int32(c)
	}
	out := make([]int32, len(bucket))
	var orphans []int32
	for i, b := range bucket {
		out[i] = owner[b]
		if out[i] < 0 {
			orphans = append(orphans, int32(i))
		}
	}
	if len(orphans) > 0 {
		cover(out, orphans, w, ords, loads)
	}
	return out
}

// cover gives each orphan (a target whose bucket has no collector), in hash
// order, to the present collector with the least load, ties to the lower
// ordinal.
func cover(out, orphans []int32, w *work, ords []int, loads []uint64) {
	sortByHash(orphans, w.hashes)
	h := make(loadHeap, len(ords))
	for c, o := range ords {
		h[c] = loadEntry{load: loads[o], ord: o, idx: int32(c)}
	}
	heap.Init(&h)
	for _, i := range orphans {
		out[i] = h[0].idx
		h[0].load += uint64(weightAt(w.weights, i))
		heap.Fix(&h, 0)
	}
}

type loadEntry struct {
	load uint64
	ord  int
	idx  int32
}

type loadHeap []loadEntry

func (h loadHeap) Len() int { return len(h) }
func (h loadHeap) Less(i, j int) bool {
	if h[i].load != h[j].load {
		return h[i].load < h[j].load
	}
	return h[i].ord < h[j].ord
}
func (h loadHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *loadHeap) Push(x any)   { *h = append(*h, x.(loadEntry)) }
func (h *loadHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func weightAt(weights []uint32, i int32) uint32 {
	if weights == nil {
		return 1
	}
	return weights[i]
}

// nest returns the bucket in [0, m) of each target under the nested balanced
// shares described above, and each bucket's load (its targets' weights
// summed; weights nil means 1 each).
func nest(hashes []uint64, weights []uint32, m int) ([]int32, []uint64) {
	bucket := make([]int32, len(hashes))
	loads := make([]uint64, m)
	if len(hashes) == 0 || m == 0 {
		return bucket, loads
	}
	// members[b] holds bucket b's targets; at level n a bucket hands on its
	// targets of highest level score from the end (topLast puts them there).
	members := make([][]int32, m)
	members[0] = allIndices(len(hashes))
	sc := &scorer{hashes: hashes}
	var total uint64
	for i := range hashes {
		total += uint64(weightAt(weights, int32(i)))
	}
	loads[0] = total
	order := make([]int, 0, m)
	for n := 1; n < m; n++ {
		var in []int32
		var got uint64
		give := func(b int) {
			last := len(members[b]) - 1
			t := members[b][last]
			members[b] = members[b][:last]
			wt := uint64(weightAt(weights, t))
			loads[b] -= wt
			got += wt
			in = append(in, t)
		}
		sc.salt = levelSalt(n)
		if weights == nil {
			countShares(members, loads, n, total, order, sc, give)
		} else {
			weightShares(members, loads, weights, n, total, &got, order, sc, give)
		}
		members[n] = in
		loads[n] = got
	}
	for b, ts := range members {
		for _, t := range ts {
			bucket[t] = int32(b)
		}
	}
	return bucket, loads
}

// rank orders the existing buckets for level n: most loaded first, ties by a
// per-level hash so the buckets that round down differ from level to level.
func rank(order []int, loads []uint64, n int) []int {
	order = order[:0]
	for b := range n {
		order = append(order, b)
	}
	salt := levelSalt(n)
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(loads[b], loads[a]); c != 0 {
			return c
		}
		return cmp.Compare(score(uint64(a), salt), score(uint64(b), salt))
	})
	return order
}

// countShares fills bucket n with unit weights: each existing bucket keeps
// q = ⌊T/(n+1)⌋ targets or, for the r = T mod (n+1) most loaded, q+1, so the
// newcomer gets q. Ranking by load first lets a bucket that gained a target
// keep it, which often leaves the other buckets' shares as they were.
func countShares(members [][]int32, loads []uint64, n int, total uint64, order []int, sc *scorer, give func(int)) {
	k := uint64(n + 1)
	q, r := total/k, total%k
	for i, b := range rank(order, loads, n) {
		keep := q
		if uint64(i) < r {
			keep = q + 1
		}
		if loads[b] > keep {
			sc.topLast(members[b], int(loads[b]-keep), false)
		}
		for loads[b] > keep {
			give(b)
		}
	}
}

// weightShares fills bucket n by weight: each bucket hands on targets while
// it stays at or above the mean, then, while the newcomer is short of the
// mean, the most loaded buckets hand on one more target each if it brings
// the newcomer closer to the mean (weight at most twice the shortfall).
func weightShares(members [][]int32, loads []uint64, weights []uint32, n int, total uint64, got *uint64, order []int, sc *scorer, give func(int)) {
	k := uint64(n + 1)
	// sorted[b] counts the targets at the end of members[b] that are in
	// level-score order; more are sorted when a bucket runs out of them.
	sorted := make([]int, n)
	top := func(b int) uint64 {
		if sorted[b] == 0 {
			sorted[b] = sc.topLast(members[b], max(8, 2*len(members[b])/(n+1)), true)
		}
		return uint64(weights[members[b][len(members[b])-1]])
	}
	pop := func(b int) {
		give(b)
		sorted[b]--
	}
	for b := range n {
		for len(members[b]) > 0 && (loads[b]-top(b))*k >= total {
			pop(b)
		}
	}
	for gave := true; gave && *got*k < total; {
		gave = false
		for _, b := range rank(order, loads, n) {
			if *got*k >= total {
				break
			}
			if len(members[b]) == 0 || k*top(b) > 2*(total-*got*k) {
				continue
			}
			pop(b)
			gave = true
		}
	}
}

func levelSalt(n int) uint64 { return uint64(n) * 0x9e3779b97f4a7c15 }

// scorer orders a bucket's targets by their score for one level.
type scorer struct {
	hashes []uint64
	salt   uint64
	// scratch
	keys []uint64
	cand []int32
	mark []uint32 // per target: the stamp of the topLast call that chose it
	gen  uint32
	rest []int32
}

// topLast reorders ms so that its last min(c, len(ms)) elements are those of
// highest level score, in increasing score order when ordered is set, and
// returns how many that is. Scores are uniform, so it first keeps the
// targets above a cut-off that about 2c+16 of them pass and selects among
// those, falling back to all of them when too few pass.
func (s *scorer) topLast(ms []int32, c int, ordered bool) int {
	c = min(c, len(ms))
	if c == 0 {
		return 0
	}
	want := 2*c + 16
	s.cand, s.keys = s.cand[:0], s.keys[:0]
	if want < len(ms)/2 {
		cut := math.MaxUint64 - uint64(float64(want)/float64(len(ms))*math.MaxUint64)
		for _, t := range ms {
			if k := score(s.hashes[t], s.salt); k >= cut {
				s.cand, s.keys = append(s.cand, t), append(s.keys, k)
			}
		}
	}
	if len(s.cand) < c {
		s.cand, s.keys = append(s.cand[:0], ms...), s.keys[:0]
		for _, t := range ms {
			s.keys = append(s.keys, score(s.hashes[t], s.salt))
		}
	}
	selectLast(s.keys, s.cand, len(s.cand)-c)
	top, tk := s.cand[len(s.cand)-c:], s.keys[len(s.cand)-c:]
	if ordered {
		sortPairs(tk, top)
	}

	// ms becomes the others, in their order, then top.
	if s.gen++; s.gen == 0 || len(s.mark) < len(s.hashes) {
		s.mark, s.gen = make([]uint32, len(s.hashes)), 1
	}
	for _, t := range top {
		s.mark[t] = s.gen
	}
	s.rest = s.rest[:0]
	for _, t := range ms {
		if s.mark[t] != s.gen {
			s.rest = append(s.rest, t)
		}
	}
	copy(ms, s.rest)
	copy(ms[len(s.rest):], top)
	return c
}

// sortPairs sorts keys increasingly, moving ts with them.
func sortPairs(keys []uint64, ts []int32) {
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
	k2, t2 := slices.Clone(keys), slices.Clone(ts)
	for i, j := range idx {
		keys[i], ts[i] = k2[j], t2[j]
	}
}

// selectLast partially orders keys (and ts with them) so that every element
// from index k on is at least every element before k (quickselect).
func selectLast(keys []uint64, ms []int32, k int) {
	lo, hi := 0, len(keys)-1
	for lo < hi {
		p := keys[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for keys[i] < p {
				i++
			}
			for keys[j] > p {
				j--
			}
			if i <= j {
				keys[i], keys[j] = keys[j], keys[i]
				ms[i], ms[j] = ms[j], ms[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return
		}
	}
}
