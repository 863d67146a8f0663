package strategy

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"

	"github.com/shardwise/shardwise/allocation"
)

// DefaultVirtualNodes is the number of ring points per collector of the
// plain ring baseline.
const DefaultVirtualNodes = 100

// RingStrategy is plain consistent hashing without a load bound: each
// collector owns vnodes points on a 64-bit ring (xxhash of "name#i"), and a
// target belongs to the first point at or after its identity hash. Movement
// on a membership change is close to the minimum; balance is whatever the
// points give.
type RingStrategy struct {
	vnodes int
	points []point
	names  []string
	book   book
}

type point struct {
	pos uint64
	idx int32
}

var _ Strategy = (*RingStrategy)(nil)

// NewRing returns an empty ring with vnodes points per collector.
func NewRing(vnodes int) *RingStrategy { return &RingStrategy{vnodes: vnodes, book: newBook()} }

// Name implements Strategy.
func (r *RingStrategy) Name() string { return Ring }

// SetCollectors implements Strategy.
func (r *RingStrategy) SetCollectors(names []string) {
	r.names = slices.Clone(names)
	r.points = r.points[:0]
	for i, n := range r.names {
		for v := range r.vnodes {
			r.points = append(r.points, point{xxhash.Sum64String(n + "#" + strconv.Itoa(v)), int32(i)})
		}
	}
	slices.SortFunc(r.points, func(a, b point) int {
		if c := cmp.Compare(a.pos, b.pos); c != 0 {
			return c
		}
		return cmp.Compare(r.names[a.idx], r.names[b.idx])
	})
	r.book.placeAll(r.place)
}

// SetJobTargets implements Strategy.
func (r *RingStrategy) SetJobTargets(jobs map[string][]*allocation.Target) {
	r.book.update(jobs, r.place)
}

func (r *RingStrategy) place(t *allocation.Target) {
	if len(r.points) == 0 {
		return
	}
	i, _ := slices.BinarySearchFunc(r.points, t.Hash, func(p point, h uint64) int { return cmp.Compare(p.pos, h) })
	if i == len(r.points) {
		i = 0
	}
	r.book.owner[t.Hash] = r.names[r.points[i].idx]
}

// Owner implements Strategy.
func (r *RingStrategy) Owner(hash uint64) (string, bool) { return r.book.lookup(hash) }
