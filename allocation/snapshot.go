package allocation

import (
	"slices"
	"sort"
	"sync/atomic"
)

// Slice is the targets of one job assigned to one collector, in a stable order
// (by address, then identity). A Slice is immutable. Version identifies its
// content: a new snapshot reuses the previous *Slice, Version included, when
// the (collector, job) pair holds exactly the same targets, so consumers can
// cache derived data (serialized responses) per Version.
type Slice struct {
	Targets []*Target
	Version uint64
}

// Snapshot is an immutable view of one assignment. All methods are safe for
// concurrent use and never block.
type Snapshot struct {
	generation uint64
	strategy   string
	epsilon    float64

	collectors []string       // sorted
	draining   []string       // sorted: on their way out, no targets of their own
	collIndex  map[string]int // name -> index into collectors
	jobs       []string       // sorted, jobs with at least one target
	jobIndex   map[string]int // name -> index into jobs
	slices     [][]*Slice     // [collector][job], nil when empty
	loads      []int          // per collector

	unassigned []*Target // targets no collector holds, by job then address

	targets int // assigned or not
	// index maps a target identity to its collector, built from slices on
	// the first Lookup: nothing in the serving path needs it, so updates do
	// not pay for it.
	index func() lookupIndex

	last    Result
	history []Result

	// base is, for a snapshot a Handoff served, the source's snapshot it
	// adds lingering targets to; nil for a source's own snapshot.
	base *Snapshot
	// drainingSlices are, in a snapshot a Handoff served, what draining
	// collectors are still served, by job index.
	drainingSlices map[string][]*Slice
}

// source is the snapshot s was derived from, or s.
func (s *Snapshot) source() *Snapshot {
	if s.base != nil {
		return s.base
	}
	return s
}

// sliceVersions hands out Slice versions, unique in the process, so that
// slices of different allocators and handoffs never share one.
var sliceVersions atomic.Uint64

func nextVersion() uint64 { return sliceVersions.Add(1) }

// Generation increases with every published snapshot.
func (s *Snapshot) Generation() uint64 { return s.generation }

// Strategy is the strategy that produced the snapshot.
func (s *Snapshot) Strategy() string { return s.strategy }

// Collectors returns the collector names in sorted order. Do not modify.
func (s *Snapshot) Collectors() []string { return s.collectors }

// Draining returns the collectors on their way out (Collector.Draining), in
// sorted order: they hold no targets, unless a Handoff serves them what they
// held. Do not modify.
func (s *Snapshot) Draining() []string { return s.draining }

// present reports whether name is a collector or a draining one.
func (s *Snapshot) present(name string) bool {
	if _, ok := s.collIndex[name]; ok {
		return true
	}
	_, ok := slices.BinarySearch(s.draining, name)
	return ok
}

// Jobs returns the names of the jobs that have targets, in sorted order.
// Do not modify.
func (s *Snapshot) Jobs() []string { return s.jobs }

// Slice returns the targets of job assigned to collector, or nil when there
// are none (unknown collector or job included). It is O(1) and allocation-free.
func (s *Snapshot) Slice(collector, job string) *Slice {
	j, ok := s.jobIndex[job]
	if !ok {
		return nil
	}
	c, ok := s.collIndex[collector]
	if !ok {
		if row := s.drainingSlices[collector]; row != nil {
			return row[j]
		}
		return nil
	}
	return s.slices[c][j]
}

// Load returns the number of targets assigned to the collector.
func (s *Snapshot) Load(collector string) int {
	if c, ok := s.collIndex[collector]; ok {
		return s.loads[c]
	}
	return 0
}

// Loads returns the number of targets per collector, in the order of Collectors.
func (s *Snapshot) Loads() []int { return slices.Clone(s.loads) }

// Targets returns the number of targets, assigned or not.
func (s *Snapshot) Targets() int { return s.targets }

// Unassigned returns the targets no collector holds. Do not modify.
func (s *Snapshot) Unassigned() []*Target { return s.unassigned }

// Balance returns the busiest collector's load over the mean load, 1 for a
// perfect balance and 0 when there are no targets or collectors.
func (s *Snapshot) Balance() float64 { return balance(s.loads) }

// Lookup returns the collector a target identity is assigned to.
// ok is false for an unknown or unassigned target.
func (s *Snapshot) Lookup(hash uint64) (collector string, ok bool) {
	if s.index == nil {
		return "", false
	}
	x := s.index()
	i := sort.Search(len(x.hashes), func(i int) bool { return x.hashes[i] >= hash })
	if i == len(x.hashes) || x.hashes[i] != hash {
		return "", false
	}
	return s.collectors[x.owner[i]], true
}

// lookupIndex is the assigned targets' identities in increasing order with
// their collector index; sorted arrays cost 12 bytes per target, a map 3x
// that.
type lookupIndex struct {
	hashes []uint64
	owner  []int32
}

// buildIndex indexes the snapshot's slices.
func (s *Snapshot) buildIndex() lookupIndex {
	n := 0
	for _, l := range s.loads {
		n += l
	}
	hashes := make([]uint64, 0, n)
	owner := make([]int32, 0, n)
	for c, row := range s.slices {
		for _, sl := range row {
			if sl == nil {
				continue
			}
			for _, t := range sl.Targets {
				hashes = append(hashes, t.Hash)
				owner = append(owner, int32(c))
			}
		}
	}
	x := lookupIndex{hashes: make([]uint64, len(hashes)), owner: make([]int32, len(hashes))}
	for i, o := range hashOrder(hashes) {
		x.hashes[i], x.owner[i] = hashes[o], owner[o]
	}
	return x
}

// Last describes the update that produced this snapshot.
func (s *Snapshot) Last() Result { return s.last }

// History returns the most recent updates, oldest first. Do not modify.
func (s *Snapshot) History() []Result { return s.history }

func balance(loads []int) float64 {
	if len(loads) == 0 {
		return 0
	}
	total, peak := 0, 0
	for _, l := range loads {
		total += l
		peak = max(peak, l)
	}
	if total == 0 {
		return 0
	}
	return float64(peak) * float64(len(loads)) / float64(total)
}
