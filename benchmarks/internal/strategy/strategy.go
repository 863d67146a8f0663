// Package strategy puts shardwise's allocation strategies and the baselines
// they are compared with behind one small interface, so that every scenario
// drives all of them with the same inputs in the same process and every ratio
// in a report is a same-run ratio.
//
// The baselines are written here, not imported: plain consistent hashing on a
// ring with virtual nodes and unbounded rendezvous hashing (the two textbook
// schemes without a load bound), the OpenTelemetry Operator allocator's
// consistent-hashing (the real github.com/buraksezer/consistent with its
// configuration) and least-weighted, and prometheus-operator's hashmod
// sharding.
package strategy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shardwise/shardwise/allocation"
)

// Strategy assigns targets to collectors. Implementations are not safe for
// concurrent use; the suite drives each from one goroutine.
type Strategy interface {
	// Name identifies the strategy and its settings in tables and plots.
	Name() string
	// SetCollectors replaces the collector set. Names are unique.
	SetCollectors(names []string)
	// SetJobTargets replaces the targets of the given jobs; a job mapped to an
	// empty slice is removed and jobs not in the map are left alone. Target
	// identities (Hash) are unique across all jobs. The caller never modifies
	// the slices or the targets afterwards.
	SetJobTargets(jobs map[string][]*allocation.Target)
	// Owner returns the collector the target identity is assigned to; ok is
	// false for an unknown or unassigned target. It is valid until the next
	// Set call.
	Owner(hash uint64) (collector string, ok bool)
}

// Reporter is implemented by strategies that account their own movement
// (shardwise's allocator): the suite cross-checks its count against theirs.
type Reporter interface {
	// Last describes the most recent update.
	Last() allocation.Result
}

// Names of the baselines.
const (
	Ring           = "ring"
	Rendezvous     = "rendezvous"
	OTelConsistent = "otel-consistent-hashing"
	OTelLeast      = "otel-least-weighted"
	HashMod        = "hashmod"
)

// Names lists every strategy New accepts: shardwise's first, then the
// baselines.
func Names() []string {
	return []string{allocation.ConsistentHashing, allocation.Ordinal, allocation.LeastWeighted, Ring, Rendezvous, OTelConsistent, OTelLeast, HashMod}
}

// New returns the named strategy. eps is the load bound of shardwise's
// consistent-hashing (0 means allocation.DefaultEpsilon); the other
// strategies ignore it.
func New(name string, eps float64) (Strategy, error) {
	switch name {
	case allocation.ConsistentHashing, allocation.LeastWeighted, allocation.Ordinal:
		return NewShardwise(name, eps)
	case Ring:
		return NewRing(DefaultVirtualNodes), nil
	case Rendezvous:
		return NewRendezvous(), nil
	case OTelConsistent:
		return NewOTelConsistent(), nil
	case OTelLeast:
		return NewOTelLeastWeighted(), nil
	case HashMod:
		return NewHashMod(), nil
	}
	return nil, fmt.Errorf("strategy %q: unknown (want one of %s)", name, strings.Join(Names(), ", "))
}

// Factory builds a fresh strategy: every measurement starts from nothing.
type Factory struct {
	// Name is the strategy name as New takes it.
	Name string
	// Epsilon is passed to New.
	Epsilon float64
}

// New builds the strategy.
func (f Factory) New() (Strategy, error) { return New(f.Name, f.Epsilon) }

// Label is how the strategy is shown: its name, with ε for shardwise's
// consistent-hashing.
func (f Factory) Label() string {
	if f.Name == allocation.ConsistentHashing {
		eps := f.Epsilon
		if eps == 0 {
			eps = allocation.DefaultEpsilon
		}
		return fmt.Sprintf("%s ε=%g", f.Name, eps)
	}
	return f.Name
}

// book keeps the targets of the baselines by job and by identity, and the
// collector each is assigned to.
type book struct {
	jobs    map[string][]*allocation.Target
	targets map[uint64]*allocation.Target
	owner   map[uint64]string
}

func newBook() book {
	return book{
		jobs:    map[string][]*allocation.Target{},
		targets: map[uint64]*allocation.Target{},
		owner:   map[uint64]string{},
	}
}

// replace applies a SetJobTargets call to the book and returns the targets
// that are new (identity not present before) and the targets that are gone.
// New targets have no owner yet; gone targets keep theirs until drop.
func (b *book) replace(jobs map[string][]*allocation.Target) (added []*allocation.Target, removed []*allocation.Target) {
	for _, job := range sortedKeys(jobs) {
		ts := jobs[job]
		keep := make(map[uint64]bool, len(ts))
		for _, t := range ts {
			keep[t.Hash] = true
		}
		for _, t := range b.jobs[job] {
			if !keep[t.Hash] {
				removed = append(removed, b.targets[t.Hash])
				delete(b.targets, t.Hash)
			}
		}
		for _, t := range ts {
			if _, ok := b.targets[t.Hash]; !ok {
				added = append(added, t)
			}
			b.targets[t.Hash] = t
		}
		if len(ts) == 0 {
			delete(b.jobs, job)
		} else {
			b.jobs[job] = ts
		}
	}
	return added, removed
}

// drop forgets the owners of removed targets.
func (b *book) drop(removed []*allocation.Target) {
	for _, t := range removed {
		delete(b.owner, t.Hash)
	}
}

// all returns every target, by job name then position: a fixed order, so
// order-dependent baselines are deterministic.
func (b *book) all() []*allocation.Target {
	out := make([]*allocation.Target, 0, len(b.targets))
	for _, job := range sortedKeys(b.jobs) {
		out = append(out, b.jobs[job]...)
	}
	return out
}

// placeAll forgets every owner and places every target again, in all's
// order: what a strategy whose placement depends only on the target and the
// collectors does when the collectors change.
func (b *book) placeAll(place func(*allocation.Target)) {
	clear(b.owner)
	for _, t := range b.all() {
		place(t)
	}
}

// update applies a SetJobTargets call for such a strategy: gone targets
// lose their owner and new ones are placed; the others stay where they are.
func (b *book) update(jobs map[string][]*allocation.Target, place func(*allocation.Target)) {
	added, removed := b.replace(jobs)
	b.drop(removed)
	for _, t := range added {
		place(t)
	}
}

func (b *book) lookup(hash uint64) (string, bool) {
	c, ok := b.owner[hash]
	return c, ok
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
