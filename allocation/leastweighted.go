package allocation

import (
	"cmp"
	"slices"
)

// leastWeighted assigns the targets at items stickily: a target keeps its
// collector while that collector exists, a target without one goes to the
// least-loaded collector, and a collector that joined in this update is filled
// up to its share (items/collectors, rounded down) by taking targets from the
// most-loaded collectors, so it is not left idle (the OpenTelemetry
// Operator's least-weighted never gives a new collector anything). Ties go to
// the lower collector index and, among targets, to the higher identity, so
// the result is a pure function of the previous assignment and the inputs.
func leastWeighted(w *work, items []int32) []int32 {
	out := make([]int32, len(w.targets))
	for i := range out {
		out[i] = -1
	}
	n := len(w.collectors)
	if n == 0 || len(items) == 0 {
		return out
	}
	load := make([]int, n)
	var free []int32
	for _, i := range items {
		if p := w.prev[i]; p >= 0 {
			out[i] = p
			load[p]++
		} else {
			free = append(free, i)
		}
	}
	// Place targets without a collector in identity order, so the result does
	// not depend on how the caller ordered them.
	sortByHash(free, w.hashes)
	for _, i := range free {
		c := argmin(load)
		out[i] = int32(c)
		load[c]++
	}

	share := len(items) / n
	var owned [][]int32
	for j, isNew := range w.joined {
		if !isNew || load[j] >= share {
			continue
		}
		if owned == nil {
			owned = make([][]int32, n)
			for _, i := range items {
				owned[out[i]] = append(owned[out[i]], i)
			}
			for c := range owned {
				sortByHash(owned[c], w.hashes)
			}
		}
		for load[j] < share {
			d := argmax(load)
			if load[d] <= share {
				break
			}
			last := len(owned[d]) - 1
			i := owned[d][last]
			owned[d] = owned[d][:last]
			out[i] = int32(j)
			owned[j] = append(owned[j], i)
			load[d]--
			load[j]++
		}
	}
	return out
}

func sortByHash(idx []int32, hashes []uint64) {
	slices.SortFunc(idx, func(a, b int32) int { return cmp.Compare(hashes[a], hashes[b]) })
}

func argmin(xs []int) int {
	m := 0
	for i, x := range xs {
		if x < xs[m] {
			m = i
		}
	}
	return m
}

func argmax(xs []int) int {
	m := 0
	for i, x := range xs {
		if x > xs[m] {
			m = i
		}
	}
	return m
}
