package strategy

import (
	"github.com/buraksezer/consistent"
	"github.com/cespare/xxhash/v2"

	"github.com/shardwise/shardwise/allocation"
)

// OTelConsistentStrategy is the OpenTelemetry Operator allocator's
// consistent-hashing (cmd/otel-allocator/internal/allocation/
// consistent_hashing.go): github.com/buraksezer/consistent with 1061
// partitions, replication factor 5 and load 1.1, hashed with xxhash and keyed
// on the target address. The bounded load applies to partitions, not targets.
// Like the operator, it rebuilds the ring on every collector change and
// locates every target again.
type OTelConsistentStrategy struct {
	ring *consistent.Consistent
	n    int
	book book
}

// OTelConfig is the operator's ring configuration.
var OTelConfig = consistent.Config{
	PartitionCount:    1061,
	ReplicationFactor: 5,
	Load:              1.1,
	Hasher:            xxhasher{},
}

type xxhasher struct{}

func (xxhasher) Sum64(b []byte) uint64 { return xxhash.Sum64(b) }

type member string

func (m member) String() string { return string(m) }

var _ Strategy = (*OTelConsistentStrategy)(nil)

// NewOTelConsistent returns an empty strategy.
func NewOTelConsistent() *OTelConsistentStrategy {
	return &OTelConsistentStrategy{book: newBook()}
}

// Name implements Strategy.
func (o *OTelConsistentStrategy) Name() string { return OTelConsistent }

// SetCollectors implements Strategy.
func (o *OTelConsistentStrategy) SetCollectors(names []string) {
	members := make([]consistent.Member, len(names))
	for i, n := range names {
		members[i] = member(n)
	}
	o.ring = consistent.New(members, OTelConfig)
	o.n = len(names)
	o.book.placeAll(o.place)
}

// SetJobTargets implements Strategy.
func (o *OTelConsistentStrategy) SetJobTargets(jobs map[string][]*allocation.Target) {
	o.book.update(jobs, o.place)
}

func (o *OTelConsistentStrategy) place(t *allocation.Target) {
	if o.n == 0 {
		return
	}
	o.book.owner[t.Hash] = o.ring.LocateKey([]byte(t.Address)).String()
}

// Owner implements Strategy.
func (o *OTelConsistentStrategy) Owner(hash uint64) (string, bool) { return o.book.lookup(hash) }

// OTelLeastWeightedStrategy is the OpenTelemetry Operator allocator's
// least-weighted (least_weighted.go and allocator.go): a target keeps its
// collector while that collector exists; a target without one (new, or whose
// collector left) goes to the collector with the fewest targets, ties to the
// one with the fewest targets of the same job, then to the lower name. A
// collector that joins gets nothing until targets churn. The operator places
// targets in Go map order; this places them by job name then discovery
// order, so runs are repeatable.
type OTelLeastWeightedStrategy struct {
	names []string
	index map[string]int
	load  []int
	jobs  []map[string]int // per collector: targets per job
	book  book
}

var _ Strategy = (*OTelLeastWeightedStrategy)(nil)

// NewOTelLeastWeighted returns an empty strategy.
func NewOTelLeastWeighted() *OTelLeastWeightedStrategy {
	return &OTelLeastWeightedStrategy{index: map[string]int{}, book: newBook()}
}

// Name implements Strategy.
func (o *OTelLeastWeightedStrategy) Name() string { return OTelLeast }

// SetCollectors implements Strategy.
func (o *OTelLeastWeightedStrategy) SetCollectors(names []string) {
	o.names = append(o.names[:0], names...)
	clear(o.index)
	for i, n := range o.names {
		o.index[n] = i
	}
	o.load = make([]int, len(names))
	o.jobs = make([]map[string]int, len(names))
	for i := range o.jobs {
		o.jobs[i] = map[string]int{}
	}
	all := o.book.all()
	var free []*allocation.Target
	for _, t := range all {
		if i, ok := o.index[o.book.owner[t.Hash]]; ok {
			o.load[i]++
			o.jobs[i][t.Job]++
			continue
		}
		delete(o.book.owner, t.Hash)
		free = append(free, t)
	}
	for _, t := range free {
		o.place(t)
	}
}

// SetJobTargets implements Strategy.
func (o *OTelLeastWeightedStrategy) SetJobTargets(jobs map[string][]*allocation.Target) {
	added, removed := o.book.replace(jobs)
	for _, t := range removed {
		if i, ok := o.index[o.book.owner[t.Hash]]; ok {
			o.load[i]--
			o.jobs[i][t.Job]--
		}
	}
	o.book.drop(removed)
	for _, t := range added {
		o.place(t)
	}
}

func (o *OTelLeastWeightedStrategy) place(t *allocation.Target) {
	best := -1
	for i := range o.names {
		if best < 0 {
			best = i
			continue
		}
		switch {
		case o.load[i] < o.load[best]:
			best = i
		case o.load[i] == o.load[best]:
			vi, vb := o.jobs[i][t.Job], o.jobs[best][t.Job]
			if vi < vb || (vi == vb && o.names[i] < o.names[best]) {
				best = i
			}
		}
	}
	if best < 0 {
		return
	}
	o.book.owner[t.Hash] = o.names[best]
	o.load[best]++
	o.jobs[best][t.Job]++
}

// Owner implements Strategy.
func (o *OTelLeastWeightedStrategy) Owner(hash uint64) (string, bool) { return o.book.lookup(hash) }
