package allocation

import (
	"cmp"
	"math"
	"slices"
)

// Consistent hashing with bounded loads, as a stable matching.
//
// Targets rank collectors by rendezvous score. A collector accepts at most
// capacity targets and ranks them first by how high the target ranks the
// collector (targets for which it is the first choice before those that were
// turned away elsewhere), then by score. The assignment is the target-optimal
// stable matching of these preferences (capacitated deferred acceptance): no
// target and collector would both rather be matched to each other than to what
// they have. It is unique, so it does not depend on the order proposals are
// processed in, which makes it a pure function of (targets, collectors,
// capacity) and lets the implementation process proposals in bulk.
//
// Stability follows from rendezvous hashing: when a collector joins, the
// targets that now rank it first move to it and, because the capacity shrinks
// with the mean, the lowest-ranked targets of full collectors spill to their
// next choice. Ranking first-choice targets above spilled ones keeps a spill
// from displacing a target at home, which shortens the chains of moves. When
// no collector is at capacity the movement is exactly the minimum. The
// overhead grows with the share of collectors at capacity: at about 100
// targets per collector and epsilon 0.05 a join moves about 1.3 times the
// minimum; a larger epsilon trades balance for movement (see the package
// benchmarks and benchmarks/README.md for measured figures).

// capacity is the load bound ceil((1+eps)·targets/collectors).
func capacity(targets, collectors int, eps float64) int {
	if collectors == 0 {
		return 0
	}
	exact := (1 + eps) * float64(targets) / float64(collectors)
	// The tolerance keeps 1.05·10000/100 = 105.00000000000001 at 105.
	c := int(math.Ceil(exact - 1e-9))
	return max(c, (targets+collectors-1)/collectors)
}

// boundedBuf is bounded's storage, reused across calls.
type boundedBuf struct {
	out, round, backing []int32
	cur                 []choice
}

// resize returns s with length n, reusing its array when large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// bucketByFirst groups the items by first choice: the items of collector c
// are backing[start[c]:start[c+1]], in item order (a counting sort into
// buf.backing).
func bucketByFirst(first []choice, n int, buf *boundedBuf) (backing, start []int32) {
	start = make([]int32, n+1)
	for _, f := range first {
		start[f.idx+1]++
	}
	for c := range n {
		start[c+1] += start[c]
	}
	buf.backing = resize(buf.backing, len(first))
	backing = buf.backing
	fill := slices.Clone(start[:n])
	for k, f := range first {
		backing[fill[f.idx]] = int32(k)
		fill[f.idx]++
	}
	return backing, start
}

// bounded assigns each item to a collector. hashes are the items' identities
// and first their most preferred collectors (best(hashes[k], seeds)). It
// returns the collector index of each item, -1 when capacity·len(seeds) is too
// small to hold them all; the result is in buf, valid until its next use.
func bounded(hashes []uint64, first []choice, seeds []uint64, capacity int, buf *boundedBuf) []int32 {
	n := len(seeds)
	if n == 0 || capacity <= 0 {
		return owners(nil, len(hashes), buf)
	}
	buf.cur = append(buf.cur[:0], first...) // each item's current proposal
	cur := buf.cur
	buf.round = resize(buf.round, len(first))
	round := buf.round
	clear(round)

	backing, start := bucketByFirst(first, n, buf)

	// round counts an item's rejections: the rank, in its preferences, of the
	// collector it is proposing to.
	// worse orders items at the same collector, worst first: later rounds
	// first, then lower scores; the hash breaks (astronomically unlikely)
	// score ties so the order is total.
	worse := func(a, b int32) int {
		if c := cmp.Compare(round[b], round[a]); c != 0 {
			return c
		}
		if c := cmp.Compare(cur[a].score, cur[b].score); c != 0 {
			return c
		}
		return cmp.Compare(hashes[a], hashes[b])
	}

	acc := make([][]int32, n) // accepted items; a min-heap by worse once full
	var queue []int32         // rejected items that must propose again
	for c := range n {
		b := backing[start[c]:start[c+1]:start[c+1]]
		if len(b) > capacity {
			// Keep the best capacity items. Sorted ascending, the kept tail is
			// also a valid min-heap.
			slices.SortFunc(b, worse)
			queue = append(queue, b[:len(b)-capacity]...)
			b = b[len(b)-capacity:]
		}
		acc[c] = b
	}

	for len(queue) > 0 {
		k := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		next := nextBelow(hashes[k], seeds, cur[k])
		cur[k] = next
		round[k]++
		if next.idx < 0 {
			continue // no collector left: only when capacity is too small
		}
		c := next.idx
		h := acc[c]
		if len(h) < capacity {
			h = append(h, k) // may reallocate away from backing: that is fine
			if len(h) == capacity {
				heapify(h, worse)
			}
			acc[c] = h
			continue
		}
		if worse(h[0], k) < 0 {
			queue = append(queue, h[0])
			h[0] = k
			siftDown(h, 0, worse)
		} else {
			queue = append(queue, k)
		}
	}

	return owners(acc, len(hashes), buf)
}

// owners turns the items each collector accepted into each item's collector
// index in buf.out, -1 for an item no collector holds.
func owners(acc [][]int32, items int, buf *boundedBuf) []int32 {
	buf.out = resize(buf.out, items)
	out := buf.out
	for k := range out {
		out[k] = -1
	}
	for c, h := range acc {
		for _, k := range h {
			out[k] = int32(c)
		}
	}
	return out
}

func heapify(h []int32, less func(a, b int32) int) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i, less)
	}
}

func siftDown(h []int32, i int, less func(a, b int32) int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && less(h[r], h[l]) < 0 {
			m = r
		}
		if less(h[m], h[i]) >= 0 {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// weightedCapacity is the weight bound of weighted bounded loads: (1+ε)
// times the mean weight per collector, plus the heaviest target's weight,
// so that every target fits somewhere. (A bound without the heaviest
// target's weight, passed only by a collector's first target, balanced
// Pareto weights to 1.30 of the mean instead of 1.45 but moved 3.1 times the
// minimum weight on a join instead of 1.3: BenchmarkWeighted.)
func weightedCapacity(weights []uint32, collectors int, eps float64) uint64 {
	if collectors == 0 {
		return 0
	}
	var total, heaviest uint64
	for _, w := range weights {
		total += uint64(max(w, 1))
		heaviest = max(heaviest, uint64(max(w, 1)))
	}
	return uint64(math.Floor((1+eps)*float64(total)/float64(collectors))) + heaviest
}

// boundedWeighted is bounded for targets of different weights (scrape
// costs): a collector holds at most capacity in weight. It runs deferred
// acceptance in rounds: every item rejected in a round proposes to its next
// choice, and each collector that received proposals keeps, in its order
// (first-choice items first, then by score), every item that still fits,
// rejecting the rest. Each round depends only on the set of proposals, so
// the result is a pure function of its inputs. An item every collector
// turned away (a collector can have shed weight after rejecting it) goes to
// the collector with the most room, which capacity guarantees exists.
func boundedWeighted(hashes []uint64, weights []uint32, first []choice, seeds []uint64, capacity uint64) []int32 {
	n := len(seeds)
	out := make([]int32, len(hashes))
	for k := range out {
		out[k] = -1
	}
	if n == 0 {
		return out
	}
	cur := slices.Clone(first)
	round := make([]int32, len(first))
	better := func(a, b int32) int { // a before b: lower round, then higher score, then hash
		if c := cmp.Compare(round[a], round[b]); c != 0 {
			return c
		}
		if c := cmp.Compare(cur[b].score, cur[a].score); c != 0 {
			return c
		}
		return cmp.Compare(hashes[a], hashes[b])
	}
	held := make([][]int32, n)
	props := make([][]int32, n)
	for k, f := range first {
		props[f.idx] = append(props[f.idx], int32(k))
	}
	var leftover []int32
	for {
		var rejected []int32
		for c := range n {
			if len(props[c]) == 0 {
				continue
			}
			cand := slices.Concat(held[c], props[c])
			props[c] = props[c][:0]
			slices.SortFunc(cand, better)
			var load uint64
			keep := make([]int32, 0, len(cand))
			for _, k := range cand {
				if w := uint64(max(weights[k], 1)); load+w <= capacity {
					keep = append(keep, k)
					load += w
				} else {
					rejected = append(rejected, k)
				}
			}
			held[c] = keep
		}
		if len(rejected) == 0 {
			break
		}
		slices.Sort(rejected)
		for _, k := range rejected {
			next := nextBelow(hashes[k], seeds, cur[k])
			cur[k] = next
			round[k]++
			if next.idx < 0 {
				leftover = append(leftover, k)
				continue
			}
			props[next.idx] = append(props[next.idx], k)
		}
	}
	placeWeighted(out, held, leftover, weights)
	return out
}

// placeWeighted writes each held item's collector into out, then gives each
// leftover item, in order, to the collector holding the least weight.
func placeWeighted(out []int32, held [][]int32, leftover []int32, weights []uint32) {
	loads := make([]uint64, len(held))
	for c, h := range held {
		for _, k := range h {
			out[k] = int32(c)
			loads[c] += uint64(max(weights[k], 1))
		}
	}
	for _, k := range leftover {
		c := 0
		for i := range loads {
			if loads[i] < loads[c] {
				c = i
			}
		}
		out[k] = int32(c)
		loads[c] += uint64(max(weights[k], 1))
	}
}
