package strategy

import (
	"cmp"
	"crypto/md5"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"

	"github.com/shardwise/shardwise/allocation"
)

// HashModStrategy is prometheus-operator's sharding: shard i of N keeps the
// targets whose hashmod of __address__ is i, where hashmod is Prometheus'
// relabel action (md5 of the value, its last 8 bytes as a big-endian uint64,
// modulo N). Collectors are ordered by the ordinal after their last '-' (the
// StatefulSet ordinal), then by name, and the i-th is shard i. N is the
// number of collectors present: prometheus-operator's shard count follows
// spec.shards, so this models a fleet whose shard count follows its members;
// while a shard restarts, the real thing leaves its targets unscraped instead.
type HashModStrategy struct {
	names []string
	sum   map[uint64]uint64 // target identity -> hashmod sum of its address
	book  book
}

var _ Strategy = (*HashModStrategy)(nil)

// NewHashMod returns an empty strategy.
func NewHashMod() *HashModStrategy {
	return &HashModStrategy{sum: map[uint64]uint64{}, book: newBook()}
}

// Name implements Strategy.
func (h *HashModStrategy) Name() string { return HashMod }

// HashModSum is Prometheus' hashmod before the modulo.
func HashModSum(value string) uint64 {
	s := md5.Sum([]byte(value))
	return binary.BigEndian.Uint64(s[8:])
}

// SetCollectors implements Strategy.
func (h *HashModStrategy) SetCollectors(names []string) {
	h.names = slices.Clone(names)
	slices.SortFunc(h.names, func(a, b string) int {
		if c := cmp.Compare(ordinal(a), ordinal(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	h.book.placeAll(h.place)
}

// ordinal is the number after the last '-', -1 when there is none.
func ordinal(name string) int {
	i := strings.LastIndexByte(name, '-')
	n, err := strconv.Atoi(name[i+1:])
	if err != nil {
		return -1
	}
	return n
}

// SetJobTargets implements Strategy.
func (h *HashModStrategy) SetJobTargets(jobs map[string][]*allocation.Target) {
	added, removed := h.book.replace(jobs)
	h.book.drop(removed)
	for _, t := range removed {
		delete(h.sum, t.Hash)
	}
	for _, t := range added {
		h.sum[t.Hash] = HashModSum(t.Address)
		h.place(t)
	}
}

func (h *HashModStrategy) place(t *allocation.Target) {
	if len(h.names) == 0 {
		return
	}
	h.book.owner[t.Hash] = h.names[h.sum[t.Hash]%uint64(len(h.names))]
}

// Owner implements Strategy.
func (h *HashModStrategy) Owner(hash uint64) (string, bool) { return h.book.lookup(hash) }
