package allocation

import "github.com/cespare/xxhash/v2"

// Rendezvous (highest-random-weight) scoring. Every (target, collector) pair
// gets a pseudo-random score from the target identity and a seed derived from
// the collector name; a target prefers collectors in decreasing score order.
// Scores depend on nothing else, so preferences survive restarts, do not
// depend on the order collectors were seen, and a collector joining or leaving
// changes only the preferences that involve it.

// seed derives a collector's scoring seed from its name.
func seed(name string) uint64 { return xxhash.Sum64String(name) }

// score is the preference of a target for a collector: the murmur3 finalizer
// of their combined hashes, a bijection with full avalanche, about a
// nanosecond per call.
func score(target, seed uint64) uint64 {
	x := target ^ seed
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// choice is a target's proposal to one collector: the collector index and the
// target's score for it. Choices order by score, then by lower index, so the
// order is total even on the (2^-64) chance of equal scores.
type choice struct {
	score uint64
	idx   int32
}

// better reports whether a is preferred to b.
func (a choice) better(b choice) bool {
	return a.score > b.score || (a.score == b.score && a.idx < b.idx)
}

// none is the choice below every real choice.
var none = choice{score: 0, idx: -1}

// best returns the target's most preferred collector among seeds.
func best(hash uint64, seeds []uint64) choice {
	top := none
	for i, s := range seeds {
		if c := (choice{score(hash, s), int32(i)}); c.better(top) || top.idx < 0 {
			top = c
		}
	}
	return top
}

// nextBelow returns the target's most preferred collector that ranks strictly
// below prev: its next choice after prev rejected it. idx is -1 when there is
// none.
func nextBelow(hash uint64, seeds []uint64, prev choice) choice {
	top := none
	for i, s := range seeds {
		c := choice{score(hash, s), int32(i)}
		if prev.better(c) && (top.idx < 0 || c.better(top)) {
			top = c
		}
	}
	return top
}
