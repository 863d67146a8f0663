package strategy

import (
	"fmt"

	"github.com/shardwise/shardwise/allocation"
)

// Shardwise drives shardwise's allocation package through its public API:
// allocation.New, SetCollectors, SetJobTargets and Snapshot.
type Shardwise struct {
	name string
	a    *allocation.Allocator
	snap *allocation.Snapshot
	last allocation.Result
}

var (
	_ Strategy = (*Shardwise)(nil)
	_ Reporter = (*Shardwise)(nil)
)

// NewShardwise returns shardwise's strategy of that name (consistent-hashing
// or least-weighted) with load bound eps (0: the default).
func NewShardwise(name string, eps float64) (*Shardwise, error) {
	a, err := allocation.New(allocation.Options{Strategy: name, Epsilon: eps})
	if err != nil {
		return nil, fmt.Errorf("new allocator: %w", err)
	}
	label := name
	if name == allocation.ConsistentHashing {
		label = fmt.Sprintf("%s ε=%g", name, a.Options().Epsilon)
	}
	return &Shardwise{name: label, a: a, snap: a.Snapshot()}, nil
}

// Name implements Strategy.
func (s *Shardwise) Name() string { return s.name }

// SetCollectors implements Strategy.
func (s *Shardwise) SetCollectors(names []string) {
	cs := make([]allocation.Collector, len(names))
	for i, n := range names {
		cs[i] = allocation.Collector{Name: n}
	}
	s.last = s.a.SetCollectors(cs)
	s.snap = s.a.Snapshot()
}

// SetJobTargets implements Strategy.
func (s *Shardwise) SetJobTargets(jobs map[string][]*allocation.Target) {
	s.last = s.a.SetJobTargets(jobs)
	s.snap = s.a.Snapshot()
}

// Owner implements Strategy.
func (s *Shardwise) Owner(hash uint64) (string, bool) { return s.snap.Lookup(hash) }

// Last implements Reporter.
func (s *Shardwise) Last() allocation.Result { return s.last }

// Snapshot returns the latest snapshot.
func (s *Shardwise) Snapshot() *allocation.Snapshot { return s.snap }
