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
// served the target at once, and A keeps being served it until B has had
// the target long enough to scrape it: without A nobody would scrape the
// target until B has polled and started (for up to a poll interval plus the
// receiver's reload delays, each time a target changes owner). A releases
// the target
//
//   - Settle after B's first poll of the target's job that is at least
//     Settle after the move (B then holds the target, from a snapshot where
//     it owns it, and has had Settle to start scraping it); or
//   - when the bound passes: MaxOverlap plus twice Settle after the move
//     (MaxOverlap is by default two of B's poll intervals as observed, two
//     DefaultPollInterval until B has polled twice); or
//   - at once when A is no longer a collector (a deleted pod does not poll
//     again), the target is no longer discovered, or it moves back to A.
//
// A target no collector can take (per-node, while its node's collector is
// draining) stays with A until one can, or until the bound passes.
//
// Settle is both how long a collector may take from a poll to scraping what
// it returned (the OpenTelemetry Collector's Prometheus receiver applies
// discovery and reloads its scrape manager at most every 5 s each) and how
// long allocator replicas behind one Service may disagree. For the overlap
// a target is scraped twice, by A and by B: samples are duplicated, never
// lost.
//
// Several allocator replicas each keep their own handoff state, and a
// collector's polls go to any of them. Assignments are a pure function of
// targets and collectors, so replicas that have seen the same discovery
// agree, and Settle covers the time they may not: a replica releases A only
// after a poll by B at least Settle after the move, when every replica
// serves the target to B, so B keeps it whichever replica it polls next;
// until then every replica serves it to A (as owner or as previous owner).
// With Settle at least the replicas' discovery skew, no target is served to
// no collector.

// DefaultPollInterval is the poll interval a handoff assumes for a collector
// it has not yet seen poll twice: the OpenTelemetry Collector's Prometheus
// receiver polls the target allocator every 30 seconds by default.
const DefaultPollInterval = 30 * time.Second

// HandoffOptions tune a Handoff.
type HandoffOptions struct {
	// MaxOverlap is the longest a previous owner keeps a moved target,
	// beyond twice Settle. Zero means two poll intervals of the new owner,
	// as observed.
	MaxOverlap time.Duration
	// Settle is how long a collector may take from a poll to scraping what
	// it returned, and how long allocator replicas behind one Service may
	// disagree (see the handoff comment). Zero releases a previous owner at
	// the new owner's first poll after the move.
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
	// ReleasedByPoll counts previous owners released after the new owner's
	// poll, ReleasedByTimeout those released by the bound.
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
	waiting map[mergeKey][]moveKey // moves not yet delivered, by new owner and job
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
	target    *Target
	owner     string    // the owner in the base snapshot
	holders   []string  // previous owners still served the target
	at        time.Time // when it moved to owner
	delivered time.Time // owner's first poll at least Settle after at; zero before
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
		moves:   map[moveKey]*move{},
		waiting: map[mergeKey][]moveKey{},
		polls:   map[string]*pollState{},
		merged:  map[mergeKey]*mergedSlice{},
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
	if snap.source() != h.base {
		return // the answer may predate a move: the next poll counts
	}
	due := false
	wk := mergeKey{collector, job}
	waiting := h.waiting[wk][:0]
	for _, k := range h.waiting[wk] {
		m := h.moves[k]
		if m == nil || m.owner != collector || !m.delivered.IsZero() {
			continue // released, moved on (fold indexes it anew) or delivered
		}
		if now.Sub(m.at) < h.opts.Settle {
			waiting = append(waiting, k)
			continue
		}
		m.delivered = now
		if h.opts.Settle == 0 {
			h.release(k, m, now, false)
		}
		due = true
	}
	h.waiting[wk] = waiting
	if h.pending {
		h.rebuildLocked(h.src.Snapshot())
	} else if due {
		h.scheduleLocked()
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

// maxOverlap is how long a target moved to owner may linger: MaxOverlap, or
// two of owner's poll intervals, plus twice Settle (the release by poll
// comes Settle after a poll at least Settle after the move).
func (h *Handoff) maxOverlap(owner string) time.Duration {
	bound := 2 * DefaultPollInterval
	if h.opts.MaxOverlap > 0 {
		bound = h.opts.MaxOverlap
	} else if ps := h.polls[owner]; ps != nil && ps.interval > 0 {
		bound = 2 * ps.interval
	}
	return bound + 2*h.opts.Settle
}

// deadline is when m ends: Settle after its delivery, or its bound.
func (h *Handoff) deadline(m *move) (time.Time, bool) {
	bound := m.at.Add(h.maxOverlap(m.owner))
	if !m.delivered.IsZero() {
		if d := m.delivered.Add(h.opts.Settle); d.Before(bound) {
			return d, false
		}
	}
	return bound, true
}

// scheduleLocked sets when Snapshot must next rebuild: the earliest
// deadline. h.mu must be held.
func (h *Handoff) scheduleLocked() {
	next := int64(0)
	for _, m := range h.moves {
		d, _ := h.deadline(m)
		if n := d.UnixNano(); next == 0 || n < next {
			next = n
		}
	}
	h.next.Store(next)
}

// rebuildLocked folds a new base snapshot into the moves, releases what
// has timed out and publishes the served snapshot. h.mu must be held.
func (h *Handoff) rebuildLocked(base *Snapshot) *Snapshot {
	now := h.opts.Now()
	if base != h.base {
		h.fold(base, now)
		h.forget(base)
		h.base = base
		// Index the moves not yet delivered by new owner and job, for
		// Polled: a poll looks at its own, not at every move.
		clear(h.waiting)
		for k, m := range h.moves {
			if m.delivered.IsZero() && m.owner != "" {
				wk := mergeKey{m.owner, k.job}
				h.waiting[wk] = append(h.waiting[wk], k)
			}
		}
	}
	for k, m := range h.moves {
		if d, timeout := h.deadline(m); !now.Before(d) {
			h.release(k, m, now, timeout)
		}
	}
	h.scheduleLocked()
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
	var unassigned map[uint64]bool // built when first needed
	ownerOf := func(hash uint64) (string, bool) {
		if o, ok := base.Lookup(hash); ok {
			return o, true
		}
		if unassigned == nil {
			unassigned = map[uint64]bool{}
			for _, t := range base.Unassigned() {
				unassigned[t.Hash] = true
			}
		}
		return "", unassigned[hash] // discovered but held by no collector: ""
	}
	if old != nil {
		for c, name := range old.collectors {
			if !base.present(name) {
				continue // a collector that left polls no more: nothing lingers with it
			}
			for j, job := range old.jobs {
				sl := old.slices[c][j]
				if sl == nil || sl == base.Slice(name, job) {
					continue
				}
				for _, t := range sl.Targets {
					if owner, ok := ownerOf(t.Hash); ok && owner != name {
						h.moved(t, name, owner, now)
					}
				}
			}
		}
	}
	for k, m := range h.moves {
		owner, ok := ownerOf(k.hash)
		if ok && owner != m.owner { // moved on without leaving a holder's slice
			m.owner, m.at, m.delivered = owner, now, time.Time{}
		}
		m.holders = slices.DeleteFunc(m.holders, func(c string) bool {
			return !base.present(c) || c == owner
		})
		if !ok || len(m.holders) == 0 {
			delete(h.moves, k) // no longer discovered, or back home
		}
	}
}

// forget drops the poll history of collectors and jobs base no longer has,
// so that pods replaced under new names (a DaemonSet's) leave nothing
// behind.
func (h *Handoff) forget(base *Snapshot) {
	for c, ps := range h.polls {
		if !base.present(c) {
			delete(h.polls, c)
			continue
		}
		for job := range ps.last {
			if _, ok := base.jobIndex[job]; !ok {
				delete(ps.last, job)
			}
		}
	}
}

// moved notes that target t, held by prev in the previous base, belongs to
// owner now ("" when no collector can take it: a per-node target whose
// node's collector is draining, say; prev keeps it until one can, or the
// bound passes).
func (h *Handoff) moved(t *Target, prev, owner string, now time.Time) {
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
	m.target, m.owner, m.at, m.delivered = t, owner, now, time.Time{}
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
		j, okj := base.jobIndex[mk.job]
		if !okj {
			continue
		}
		c, okc := base.collIndex[mk.collector]
		if !okc { // a draining collector
			if s.drainingSlices == nil {
				s.drainingSlices = map[string][]*Slice{}
			}
			row := s.drainingSlices[mk.collector]
			if row == nil {
				row = make([]*Slice, len(base.jobs))
				s.drainingSlices[mk.collector] = row
			}
			row[j] = h.merge(mk, nil, ts)
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
