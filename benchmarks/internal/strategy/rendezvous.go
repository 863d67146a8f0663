package strategy

import (
	"github.com/cespare/xxhash/v2"

	"github.com/shardwise/shardwise/allocation"
)

// RendezvousStrategy is rendezvous (highest-random-weight) hashing without a
// load bound: a target goes to the collector with the highest score. It
// scores like shardwise's allocator (xxhash of the name as a seed, the
// murmur3 finalizer of target^seed), so it is shardwise's consistent-hashing
// with ε = ∞: the movement floor, at the balance plain hashing gives.
type RendezvousStrategy struct {
	names []string
	seeds []uint64
	book  book
}

var _ Strategy = (*RendezvousStrategy)(nil)

// NewRendezvous returns an empty strategy.
func NewRendezvous() *RendezvousStrategy { return &RendezvousStrategy{book: newBook()} }

// Name implements Strategy.
func (r *RendezvousStrategy) Name() string { return Rendezvous }

// SetCollectors implements Strategy.
func (r *RendezvousStrategy) SetCollectors(names []string) {
	r.names = append(r.names[:0], names...)
	r.seeds = r.seeds[:0]
	for _, n := range names {
		r.seeds = append(r.seeds, xxhash.Sum64String(n))
	}
	r.book.placeAll(r.place)
}

// SetJobTargets implements Strategy.
func (r *RendezvousStrategy) SetJobTargets(jobs map[string][]*allocation.Target) {
	r.book.update(jobs, r.place)
}

func (r *RendezvousStrategy) place(t *allocation.Target) {
	best, top := -1, uint64(0)
	for i, s := range r.seeds {
		if sc := mix(t.Hash ^ s); best < 0 || sc > top || (sc == top && r.names[i] < r.names[best]) {
			best, top = i, sc
		}
	}
	if best >= 0 {
		r.book.owner[t.Hash] = r.names[best]
	}
}

// Owner implements Strategy.
func (r *RendezvousStrategy) Owner(hash uint64) (string, bool) { return r.book.lookup(hash) }

// mix is the murmur3 64-bit finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
