package allocation

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Make-before-break handoff.
//
// When an assignment moves a target from collector A to collector B, B is
// served the target at once, and A keeps being served it until B has polled
// the target's job after the move: until then B may not scrape it yet, and
// without A nobody would (for up to one poll interval, each time a target
// changes owner). A releases the target when
//
//   - B polls the job, from a snapshot in which B owns the target, at least
//     Settle after the move; or
//   - MaxOverlap and Settle pass after the move (MaxOverlap is by default
//     two of B's poll intervals as observed, two DefaultPollInterval until B
//     has polled twice); or
//   - A is no longer a collector (a deleted pod does not poll again), the
//     target is no longer discovered, or the target moves back to A.
//
// For the overlap a target is scraped twice, by A and by B: samples are
// duplicated, never lost.
//
// Several allocator replicas behind one Service each keep their own handoff
// state, and a collector's polls go to any of them. Assignments are a pure
// function of targets and collectors, so replicas that have seen the same
// discovery agree; Settle covers the time they may not. A replica releases A
// only on a poll by B at least Settle after the move, by which time every
// replica serves the target to B, so B keeps it whichever replica it polls
// next; until then every replica serves it to A (as owner or as previous
// owner). With Settle at least the replicas' discovery skew, no target is
// served to no collector.

// DefaultPollInterval is the poll interval a handoff assumes for a collector
// it has not yet seen poll twice: the OpenTelemetry Collector's Prometheus
// receiver polls the target allocator every 30 seconds by default.
const DefaultPollInterval = 30 * time.Second

// HandoffOptions tune a Handoff.
type HandoffOptions struct {
	// MaxOverlap is the longest a previous owner keeps a moved target,
	// beyond Settle. Zero means two poll intervals of the new owner, as
	// observed.
	MaxOverlap time.Duration
	// Settle is the least time between a move and the poll by the new owner
	// that releases the previous one: how long allocator replicas behind one
	// Service may disagree. Zero for a single replica.
	Settle time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// HandoffStats describe a handoff's state and what it has done.
type HandoffStats struct {
	// Lingering is the number of (target, previous owner) pairs served now.
	Lingering int
	// Moves counts the targets that changed owner while their previous
	// owner stayed a collector.
	Moves uint64
	// ReleasedByPoll counts previous owners released by the new owner's
	// poll, ReleasedByTimeout those released by MaxOverlap.
	ReleasedByPoll, ReleasedByTimeout uint64
	// OverlapSeconds sums, over released pairs, how long the target was
	// served to both collectors.
	OverlapSeconds float64
}

// Handoff serves the assignments of a source (an Allocator) with every moved
// target also served to its previous owners, as the package comment on
// handoff says. It is safe for concurrent use; Snapshot never blocks on
// another Snapshot for longer than a rebuild.
type Handoff struct {
	src  interface{ Snapshot() *Snapshot }
	opts HandoffOptions

	served atomic.Pointer[Snapshot] // base plus lingering targets
	// next is the earliest MaxOverlap deadline in unix nanoseconds, 0 when
	// nothing lingers: Snapshot rebuilds once it passes.
	next atomic.Int64

	mu      sync.Mutex // guards the rest
	base    *Snapshot
	moves   map[moveKey]*move
	polls   map[string]*pollState
	merged  map[mergeKey]*mergedSlice
	stats   HandoffStats
	pending bool // a release happened since the last rebuild
}

type moveKey struct {
	job  string
	hash uint64
}

// move is a target whose owner changed while previous owners still serve it.
type move struct {
	target  *Target
	owner   string    // the owner in the base snapshot
	holders []string  // previous owners still served the target
	at      time.Time // when it moved to owner
}

// pollState is what a handoff has seen of one collector's polls.
type pollState struct {
	last     map[string]time.Time // by job
	interval time.Duration        // the latest gap between two polls of a job
}

type mergeKey struct{ collector, job string }

// mergedSlice memoises a base slice with lingering targets added, so an
// unchanged pair keeps its Version (and the server its cached body).
type mergedSlice struct {
	base  *Slice
	extra uint64 // xor of the extra targets' hashes
	n     int
	slice *Slice
}

// NewHandoff returns a handoff over src.
func NewHandoff(src interface{ Snapshot() *Snapshot }, opts HandoffOptions) *Handoff {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Handoff{
		src: src, opts: opts,
		moves:  map[moveKey]*move{},
		polls:  map[string]*pollState{},
		merged: map[mergeKey]*mergedSlice{},
	}
}

// Snapshot returns the source's latest assignment with the lingering
// targets added to their previous owners' slices. Its loads, Lookup and
// Unassigned are the source's: a lingering target is not counted twice.
func (h *Handoff) Snapshot() *Snapshot {
	base := h.src.Snapshot()
	s := h.served.Load()
	if s != nil && s.source() == base {
		if n := h.next.Load(); n == 0 || h.opts.Now().UnixNano() < n {
			return s
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rebuildLocked(h.src.Snapshot())
}

// Polled records that collector fetched job's targets from snap (a
// snapshot this handoff served): previous owners of the targets that moved
// to collector are released, if snap is of the latest source snapshot the
// handoff has seen (an earlier one may not hold them yet).
func (h *Handoff) Polled(collector, job string, snap *Snapshot) {
	if _, ok := snap.collIndex[collector]; !ok {
		return // an unknown collector or job is not remembered: ids come from clients
	}
	if _, ok := snap.jobIndex[job]; !ok {
		return
	}
	now := h.opts.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	ps := h.polls[collector]
	if ps == nil {
		ps = &pollState{last: map[string]time.Time{}}
		h.polls[collector] = ps
	}
	if last, ok := ps.last[job]; ok && now.Sub(last) > 0 {
		ps.interval = now.Sub(last)
	}
	ps.last[job] = now
	if snap.source() == h.base { // else the answer may predate a move: the next poll counts
		for k, m := range h.moves {
			if k.job == job && m.owner == collector && now.Sub(m.at) >= h.opts.Settle {
				h.release(k, m, now, false)
			}
		}
	}
	if h.pending {
		h.rebuildLocked(h.src.Snapshot())
	}
}

// Stats returns the handoff's counters and how many pairs linger now, as of
// the source's latest snapshot.
func (h *Handoff) Stats() HandoffStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rebuildLocked(h.src.Snapshot())
	st := h.stats
	for _, m := range h.moves {
		st.Lingering += len(m.holders)
	}
	return st
}

// release ends a move for all its holders.
func (h *Handoff) release(k moveKey, m *move, now time.Time, timeout bool) {
	n := uint64(len(m.holders))
	if timeout {
		h.stats.ReleasedByTimeout += n
	} else {
		h.stats.ReleasedByPoll += n
	}
	h.stats.OverlapSeconds += float64(n) * now.Sub(m.at).Seconds()
	delete(h.moves, k)
	h.pending = true
}

// maxOverlap is how long a target moved to owner may linger: MaxOverlap,
// or two of owner's poll intervals, plus Settle (a poll within Settle of the
// move may have gone to a replica that did not know of it).
func (h *Handoff) maxOverlap(owner string) time.Duration {
	if h.opts.MaxOverlap > 0 {
		return h.opts.MaxOverlap + h.opts.Settle
	}
	if ps := h.polls[owner]; ps != nil && ps.interval > 0 {
		return 2*ps.interval + h.opts.Settle
	}
	return 2*DefaultPollInterval + h.opts.Settle
}

// rebuildLocked folds a new base snapshot into the moves, releases what
// has timed out and publishes the served snapshot. h.mu must be held.
func (h *Handoff) rebuildLocked(base *Snapshot) *Snapshot {
	now := h.opts.Now()
	if base != h.base {
		h.fold(base, now)
		h.base = base
	}
	next := int64(0)
	for k, m := range h.moves {
		deadline := m.at.Add(h.maxOverlap(m.owner))
		if !now.Before(deadline) {
			h.release(k, m, now, true)
			continue
		}
		if d := deadline.UnixNano(); next == 0 || d < next {
			next = d
		}
	}
	h.next.Store(next)
	if s := h.served.Load(); s != nil && s.source() == base && !h.pending {
		return s // nothing changed: keep the snapshot (and what servers cache by it)
	}
	s := h.overlay(base)
	h.served.Store(s)
	h.pending = false
	return s
}

// fold records the targets that changed owner between h.base and base,
// and drops what base makes moot.
func (h *Handoff) fold(base *Snapshot, now time.Time) {
	old := h.base
	if old != nil {
		for c, name := range old.collectors {
			if _, still := base.collIndex[name]; !still {
				continue // a collector that left polls no more: nothing lingers with it
			}
			for j, job := range old.jobs {
				sl := old.slices[c][j]
				if sl == nil || sl == base.Slice(name, job) {
					continue
				}
				for _, t := range sl.Targets {
					h.moved(t, name, base, now)
				}
			}
		}
	}
	for k, m := range h.moves {
		owner, ok := base.Lookup(k.hash)
		m.holders = slices.DeleteFunc(m.holders, func(c string) bool {
			_, still := base.collIndex[c]
			return !still || c == owner
		})
		if !ok || len(m.holders) == 0 {
			delete(h.moves, k) // no longer discovered, or back home
		}
	}
}

// moved notes that target t, owned by prev in the previous base, may have a
// new owner in base.
func (h *Handoff) moved(t *Target, prev string, base *Snapshot, now time.Time) {
	owner, ok := base.Lookup(t.Hash)
	if !ok || owner == prev {
		return
	}
	k := moveKey{job: t.Job, hash: t.Hash}
	m := h.moves[k]
	if m == nil {
		m = &move{target: t}
		h.moves[k] = m
	}
	if !slices.Contains(m.holders, prev) {
		m.holders = append(m.holders, prev)
		h.stats.Moves++
	}
	m.target, m.owner, m.at = t, owner, now
}

// overlay returns base with each lingering target added to its holders'
// slices, or base itself when nothing lingers.
func (h *Handoff) overlay(base *Snapshot) *Snapshot {
	if len(h.moves) == 0 {
		clear(h.merged)
		return base
	}
	extra := map[mergeKey][]*Target{}
	for k, m := range h.moves {
		for _, c := range m.holders {
			mk := mergeKey{c, k.job}
			extra[mk] = append(extra[mk], m.target)
		}
	}
	s := *base
	s.base = base
	s.slices = slices.Clone(base.slices)
	cloned := make([]bool, len(s.slices))
	for mk, ts := range extra {
		c, okc := base.collIndex[mk.collector]
		j, okj := base.jobIndex[mk.job]
		if !okc || !okj {
			continue
		}
		if !cloned[c] {
			s.slices[c] = slices.Clone(base.slices[c])
			cloned[c] = true
		}
		s.slices[c][j] = h.merge(mk, base.slices[c][j], ts)
	}
	for mk := range h.merged {
		if _, ok := extra[mk]; !ok {
			delete(h.merged, mk)
		}
	}
	return &s
}

// merge returns sl with ts added, in slice order, reusing the previous
// result when neither changed.
func (h *Handoff) merge(mk mergeKey, sl *Slice, ts []*Target) *Slice {
	var x uint64
	for _, t := range ts {
		x ^= t.Hash
	}
	if m := h.merged[mk]; m != nil && m.base == sl && m.extra == x && m.n == len(ts) {
		return m.slice
	}
	var all []*Target
	if sl != nil {
		all = slices.Concat(sl.Targets, ts)
	} else {
		all = slices.Clone(ts)
	}
	slices.SortFunc(all, func(a, b *Target) int {
		return cmp.Or(cmp.Compare(a.Address, b.Address), cmp.Compare(a.Hash, b.Hash))
	})
	out := &Slice{Targets: all, Version: nextVersion()}
	h.merged[mk] = &mergedSlice{base: sl, extra: x, n: len(ts), slice: out}
	return out
}
