package allocation

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardwise/shardwise/internal/parallel"
)

// historySize is how many recent updates a snapshot remembers.
const historySize = 32

// Allocator keeps the current targets and collectors, assigns targets with
// the configured strategy on every change and publishes the result as an
// immutable Snapshot. Updates are serialized; Snapshot never blocks.
type Allocator struct {
	opts Options

	mu         sync.Mutex // serializes updates and guards the fields below
	collectors []Collector
	seeds      []uint64 // scoring seed per collector
	jobs       map[string]*jobState
	generation uint64
	history    []Result
	// bufs holds *work: the flat view's storage, reused by rebalances so that
	// an update of one job does not allocate arrays for all targets, and
	// released by the garbage collector when updates stop.
	bufs sync.Pool

	snap atomic.Pointer[Snapshot] // the latest published snapshot
	// draining are the collectors on their way out, sorted; immutable once
	// published.
	draining []string
	// learned are weights learned from the collectors' scrapes.
	learned map[LearnedKey]uint32
	now     func() time.Time
}

// jobState is one job's targets, sorted by address then identity, with the
// collector each is assigned to and, for rendezvous-based strategies, its
// most preferred collector (cached: recomputing it costs one score per
// collector).
type jobState struct {
	targets []*Target
	owner   []int32 // index into Allocator.collectors, -1 unassigned
	first   []choice
}

// New returns an allocator with no targets and no collectors.
func New(opts Options) (*Allocator, error) {
	if opts.Strategy == "" {
		opts.Strategy = ConsistentHashing
	}
	if opts.Epsilon == 0 {
		opts.Epsilon = DefaultEpsilon
	}
	if opts.Epsilon < 0 {
		return nil, fmt.Errorf("epsilon must be positive, got %v", opts.Epsilon)
	}
	switch opts.FallbackStrategy {
	case "", ConsistentHashing, LeastWeighted:
	default:
		return nil, fmt.Errorf("allocation_fallback_strategy %q: %w (want %s or %s)", opts.FallbackStrategy, ErrUnknownStrategy, ConsistentHashing, LeastWeighted)
	}
	switch opts.Strategy {
	case ConsistentHashing, LeastWeighted, Ordinal:
		// Only per-node has a fallback. The OpenTelemetry Operator writes
		// allocation_fallback_strategy: consistent-hashing whatever the
		// strategy (and its allocator ignores it), so a known name is
		// accepted and ignored here.
		opts.FallbackStrategy = ""
	case PerNode:
	default:
		return nil, fmt.Errorf("allocation_strategy %q: %w (want %s)", opts.Strategy, ErrUnknownStrategy, strings.Join(Strategies(), ", "))
	}
	a := &Allocator{opts: opts, jobs: map[string]*jobState{}, now: time.Now}
	a.publish(Result{}, nil, a.now())
	return a, nil
}

// Strategies lists the strategy names New accepts.
func Strategies() []string { return []string{ConsistentHashing, LeastWeighted, PerNode, Ordinal} }

// Options returns the options in effect, defaults filled in.
func (a *Allocator) Options() Options { return a.opts }

// Snapshot returns the latest assignment. It never blocks.
func (a *Allocator) Snapshot() *Snapshot { return a.snap.Load() }

// usesRendezvous reports whether some strategy in use ranks collectors by
// rendezvous score, so first choices must be kept.
func (a *Allocator) usesRendezvous() bool {
	return a.opts.Strategy == ConsistentHashing || a.opts.FallbackStrategy == ConsistentHashing || a.opts.Strategy == PerNode || a.opts.Strategy == Ordinal
}

// SetCollectors replaces the collector set. Collectors are identified by name;
// a duplicate name keeps the last entry.
func (a *Allocator) SetCollectors(cs []Collector) Result {
	a.mu.Lock()
	defer a.mu.Unlock()
	start := a.now()

	byName := make(map[string]Collector, len(cs))
	for _, c := range cs {
		byName[c.Name] = c
	}
	next := make([]Collector, 0, len(byName))
	a.draining = nil // the published snapshot keeps the previous list
	for _, c := range byName {
		if c.Draining {
			a.draining = append(a.draining, c.Name)
			continue
		}
		next = append(next, c)
	}
	slices.Sort(a.draining)
	slices.SortFunc(next, func(x, y Collector) int { return strings.Compare(x.Name, y.Name) })

	// Map old collector indices to new ones; -2 marks a collector that left.
	newIdx := make(map[string]int32, len(next))
	for i, c := range next {
		newIdx[c.Name] = int32(i)
	}
	remap := make([]int32, len(a.collectors))
	for i, c := range a.collectors {
		if j, ok := newIdx[c.Name]; ok {
			remap[i] = j
		} else {
			remap[i] = -2
		}
	}
	oldIdx := make(map[string]bool, len(a.collectors))
	for _, c := range a.collectors {
		oldIdx[c.Name] = true
	}
	joined := make([]bool, len(next))
	var joiners []int32
	for i, c := range next {
		if !oldIdx[c.Name] {
			joined[i] = true
			joiners = append(joiners, int32(i))
		}
	}
	seeds := make([]uint64, len(next))
	for i, c := range next {
		seeds[i] = seed(c.Name)
	}

	rendezvous := a.usesRendezvous()
	for _, js := range a.jobs {
		for k, t := range js.targets {
			if o := js.owner[k]; o >= 0 {
				js.owner[k] = remap[o]
			}
			if !rendezvous {
				continue
			}
			f := js.first[k]
			if f.idx >= 0 && remap[f.idx] >= 0 {
				// Still there: only a joiner can beat it.
				f.idx = remap[f.idx]
				for _, j := range joiners {
					if c := (choice{score(t.Hash, seeds[j]), j}); c.better(f) {
						f = c
					}
				}
			} else {
				f = best(t.Hash, seeds)
			}
			js.first[k] = f
		}
	}
	a.collectors, a.seeds = next, seeds
	return a.rebalance(start, joined, nil)
}

// LearnedKey names a target in learned weights: its job and its instance
// label after relabeling (Target.Instance), as a metrics backend knows it.
type LearnedKey struct{ Job, Instance string }

// SetLearnedWeights replaces the weights learned from what the collectors
// scraped (nil: none) and rebalances. A target's own Weight, from its
// labels, wins over a learned one.
func (a *Allocator) SetLearnedWeights(ws map[LearnedKey]uint32) Result {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.learned = ws
	return a.rebalance(a.now(), make([]bool, len(a.collectors)), nil)
}

// weight is t's weight: its own, else a learned one, else 0 (one).
func (a *Allocator) weight(t *Target) uint32 {
	if t.Weight > 0 || a.learned == nil {
		return t.Weight
	}
	return a.learned[LearnedKey{t.Job, t.Instance()}]
}

// SetJobTargets replaces the targets of the given jobs; a job mapped to an
// empty slice is removed, jobs not in the map are left alone. Within a job a
// later target with the same Hash replaces an earlier one.
func (a *Allocator) SetJobTargets(jobs map[string][]*Target) Result {
	a.mu.Lock()
	defer a.mu.Unlock()
	start := a.now()
	dirty := make(map[string]bool, len(jobs))
	type task struct {
		job string
		old *jobState
		ts  []*Target
		js  *jobState
	}
	var tasks []*task
	for job, ts := range jobs {
		old := a.jobs[job]
		dirty[job] = true
		if len(ts) == 0 {
			delete(a.jobs, job)
			continue
		}
		tasks = append(tasks, &task{job: job, old: old, ts: ts})
	}
	// Jobs are independent: prepare them in parallel.
	rendezvous := a.usesRendezvous()
	parallel.Each(len(tasks), func(_, i int) {
		t := tasks[i]
		t.js = newJobState(t.ts, t.old, rendezvous, a.seeds)
	})
	for _, t := range tasks {
		a.jobs[t.job] = t.js
	}
	return a.rebalance(start, make([]bool, len(a.collectors)), dirty)
}

// newJobState builds a job's state from its targets: deduplicated (a later
// target with the same Hash wins), sorted for serving, with the owners and
// first choices of the targets old also has.
func newJobState(ts []*Target, old *jobState, rendezvous bool, seeds []uint64) *jobState {
	var prev map[uint64]int
	if old != nil {
		prev = make(map[uint64]int, len(old.targets))
		for k, t := range old.targets {
			prev[t.Hash] = k
		}
	}
	seen := make(map[uint64]int, len(ts))
	uniq := make([]*Target, 0, len(ts))
	for _, t := range ts {
		if k, ok := seen[t.Hash]; ok {
			uniq[k] = t
			continue
		}
		seen[t.Hash] = len(uniq)
		uniq = append(uniq, t)
	}
	slices.SortFunc(uniq, func(x, y *Target) int {
		if c := strings.Compare(x.Address, y.Address); c != 0 {
			return c
		}
		return cmp.Compare(x.Hash, y.Hash)
	})
	js := &jobState{targets: uniq, owner: make([]int32, len(uniq))}
	if rendezvous {
		js.first = make([]choice, len(uniq))
	}
	// Scoring every collector for every new target dominates a large job:
	// chunks of it run in parallel.
	const chunk = 1 << 13
	parallel.Each((len(uniq)+chunk-1)/chunk, func(_, c int) {
		for k := c * chunk; k < min(len(uniq), (c+1)*chunk); k++ {
			t := uniq[k]
			js.owner[k] = -1
			if pk, ok := prev[t.Hash]; ok {
				js.owner[k] = old.owner[pk]
				if rendezvous {
					js.first[k] = old.first[pk]
				}
			} else if rendezvous {
				js.first[k] = best(t.Hash, seeds)
			}
		}
	})
	return js
}

// work is the flat view of all targets that a strategy assigns.
type work struct {
	targets    []*Target
	hashes     []uint64
	weights    []uint32 // nil unless some target weighs more than 1
	weightBuf  []uint32 // weights' storage, reused
	prev       []int32  // collector before the update: -1 none, -2 one that left
	first      []choice
	collectors []Collector
	seeds      []uint64
	joined     []bool // per collector: new in this update
	eps        float64
	bounded    boundedBuf
}

// rebalance assigns every target, records the movement and publishes a
// snapshot. dirty names the jobs whose targets were replaced; nil means the
// collectors changed, so every job is rebuilt. a.mu must be held.
func (a *Allocator) rebalance(start time.Time, joined []bool, dirty map[string]bool) Result {
	names := slices.Sorted(maps.Keys(a.jobs))
	w, _ := a.bufs.Get().(*work)
	if w == nil {
		w = &work{}
	}
	defer func() {
		clear(w.targets) // keep no removed target alive
		a.bufs.Put(w)
	}()
	total := a.gather(w, names, joined)

	out := assign(a.opts, w)
	res := a.movement(w, out, total, joined)

	// Write the assignment back, noting the jobs where it changed.
	i := 0
	for _, name := range names {
		js := a.jobs[name]
		seg := out[i : i+len(js.targets)]
		if dirty != nil && !slices.Equal(js.owner, seg) {
			dirty[name] = true
		}
		copy(js.owner, seg)
		i += len(js.targets)
	}
	return a.publish(res, dirty, start)
}

// gather fills w with every target of the named jobs, in that order, with
// their hashes, previous owners and (for rendezvous strategies) first
// choices, and returns how many there are.
func (a *Allocator) gather(w *work, names []string, joined []bool) int {
	total := 0
	for _, name := range names {
		total += len(a.jobs[name].targets)
	}
	w.targets = slices.Grow(w.targets[:0], total)
	w.hashes = slices.Grow(w.hashes[:0], total)
	w.prev = slices.Grow(w.prev[:0], total)
	w.first = w.first[:0]
	rendezvous := a.usesRendezvous()
	if rendezvous {
		w.first = slices.Grow(w.first, total)
	}
	w.collectors, w.seeds, w.joined, w.eps = a.collectors, a.seeds, joined, a.opts.Epsilon
	weights := slices.Grow(w.weightBuf[:0], total)
	weighted := false
	for _, name := range names {
		js := a.jobs[name]
		w.targets = append(w.targets, js.targets...)
		for _, t := range js.targets {
			w.hashes = append(w.hashes, t.Hash)
			wt := a.weight(t)
			weights = append(weights, wt)
			weighted = weighted || wt > 1
		}
		w.prev = append(w.prev, js.owner...)
		if rendezvous {
			w.first = append(w.first, js.first...)
		}
	}
	w.weightBuf, w.weights = weights, nil
	if weighted {
		w.weights = weights
	}
	return total
}

// movement counts the targets out moves and leaves unassigned, and the
// least any assignment within the strategy's bounds would have moved (Min):
// the targets whose collector left, the joiners' share, and for consistent
// hashing what collectors held above the new capacity.
func (a *Allocator) movement(w *work, out []int32, total int, joined []bool) Result {
	res := Result{Targets: total, Collectors: len(a.collectors)}
	left, joiners := 0, 0
	prevLoad := make([]int, len(a.collectors))
	for i, o := range out {
		p := w.prev[i]
		if p != -1 && o != p {
			res.Moved++
		}
		switch {
		case p == -2:
			left++
		case p >= 0:
			prevLoad[p]++
		}
		if o < 0 {
			res.Unassigned++
		}
	}
	for _, j := range joined {
		if j {
			joiners++
		}
	}
	res.Min = left
	if a.opts.Strategy != PerNode && len(a.collectors) > 0 {
		res.Min = max(res.Min, total*joiners/len(a.collectors))
		if a.opts.Strategy == ConsistentHashing {
			capa, over := capacity(total, len(a.collectors), a.opts.Epsilon), 0
			for _, l := range prevLoad {
				over += max(0, l-capa)
			}
			res.Min = max(res.Min, over)
		}
	}
	return res
}

// assign dispatches to the strategy.
func assign(opts Options, w *work) []int32 {
	switch opts.Strategy {
	case LeastWeighted:
		return leastWeighted(w, allIndices(len(w.targets)))
	case PerNode:
		return perNode(w, opts.FallbackStrategy)
	case Ordinal:
		return ordinal(w)
	default:
		return consistent(w, nil)
	}
}

func allIndices(n int) []int32 {
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	return idx
}

// consistent assigns the targets at items, nil meaning all of them, by
// bounded-load rendezvous hashing.
func consistent(w *work, items []int32) []int32 {
	if items == nil && w.weights != nil {
		return boundedWeighted(w.hashes, w.weights, w.first, w.seeds, weightedCapacity(w.weights, len(w.collectors), w.eps))
	}
	if items == nil {
		return bounded(w.hashes, w.first, w.seeds, capacity(len(w.hashes), len(w.collectors), w.eps), &w.bounded)
	}
	out := make([]int32, len(w.targets))
	for i := range out {
		out[i] = -1
	}
	if len(w.collectors) == 0 || len(items) == 0 {
		return out
	}
	hashes := make([]uint64, len(items))
	first := make([]choice, len(items))
	for k, i := range items {
		hashes[k] = w.hashes[i]
		first[k] = w.first[i]
	}
	got := bounded(hashes, first, w.seeds, capacity(len(items), len(w.collectors), w.eps), &w.bounded)
	for k, i := range items {
		out[i] = got[k]
	}
	return out
}

// publish builds and stores the snapshot for the current state and returns
// res with its Duration measured from start. dirty names the jobs whose
// targets or assignment changed; for the others the previous snapshot's
// slices are reused as they are. nil dirty rebuilds every job. a.mu must be
// held (or the allocator not yet shared).
func (a *Allocator) publish(res Result, dirty map[string]bool, start time.Time) Result {
	prev := a.snap.Load()
	a.generation++

	s := &Snapshot{
		draining:   a.draining,
		generation: a.generation,
		strategy:   a.opts.Strategy,
		epsilon:    a.opts.Epsilon,
		collectors: make([]string, len(a.collectors)),
		collIndex:  make(map[string]int, len(a.collectors)),
		loads:      make([]int, len(a.collectors)),
	}
	for i, c := range a.collectors {
		s.collectors[i] = c.Name
		s.collIndex[c.Name] = i
	}
	s.jobs = make([]string, 0, len(a.jobs))
	total := 0
	for name, js := range a.jobs {
		s.jobs = append(s.jobs, name)
		total += len(js.targets)
	}
	slices.Sort(s.jobs)
	s.jobIndex = make(map[string]int, len(s.jobs))
	for j, name := range s.jobs {
		s.jobIndex[name] = j
	}
	s.slices = make([][]*Slice, len(a.collectors))
	for c := range s.slices {
		s.slices[c] = make([]*Slice, len(s.jobs))
	}

	for j, name := range s.jobs {
		js := a.jobs[name]
		if pj, ok := prev.jobIndex[name]; ok && dirty != nil && !dirty[name] {
			// Same collectors, same targets, same assignment.
			for c := range s.slices {
				sl := prev.slices[c][pj]
				s.slices[c][j] = sl
				if sl != nil {
					s.loads[c] += len(sl.Targets)
				}
			}
			s.unassigned = appendUnassigned(s.unassigned, js)
			continue
		}
		s.unassigned = appendUnassigned(s.unassigned, js)
		for c, v := range carve(js, len(a.collectors)) {
			if len(v) == 0 {
				continue
			}
			s.loads[c] += len(v)
			if old := prev.sliceOrNil(a.collectors[c].Name, name); old != nil && slices.Equal(old.Targets, v) {
				s.slices[c][j] = old
				continue
			}
			s.slices[c][j] = &Slice{Targets: v, Version: nextVersion()}
		}
	}
	s.targets = total
	s.index = sync.OnceValue(s.buildIndex)

	res.Duration = a.now().Sub(start)
	a.history = append(a.history, res)
	if len(a.history) > historySize {
		a.history = slices.Clone(a.history[len(a.history)-historySize:])
	}
	s.last = res
	s.history = slices.Clone(a.history)
	a.snap.Store(s)
	return res
}

// carve splits a job's targets by collector into slices that keep the job's
// (address) order, over one backing array.
func carve(js *jobState, collectors int) [][]*Target {
	counts := make([]int, collectors)
	assigned := 0
	for _, o := range js.owner {
		if o >= 0 {
			counts[o]++
			assigned++
		}
	}
	backing := make([]*Target, 0, assigned)
	views := make([][]*Target, collectors)
	for c, n := range counts {
		views[c] = backing[len(backing) : len(backing) : len(backing)+n]
		backing = backing[:len(backing)+n]
	}
	for k, t := range js.targets {
		if o := js.owner[k]; o >= 0 {
			views[o] = append(views[o], t)
		}
	}
	return views
}

func appendUnassigned(dst []*Target, js *jobState) []*Target {
	for k, o := range js.owner {
		if o < 0 {
			dst = append(dst, js.targets[k])
		}
	}
	return dst
}

// hashOrder returns the indices of hashes in increasing order of hash. Large
// inputs take a least-significant-digit radix sort, linear in their length.
func hashOrder(hashes []uint64) []int32 {
	order := make([]int32, len(hashes))
	for i := range order {
		order[i] = int32(i)
	}
	if len(hashes) < 1<<12 {
		slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(hashes[a], hashes[b]) })
		return order
	}
	const bits = 11
	const mask = 1<<bits - 1
	tmp := make([]int32, len(order))
	count := make([]int32, 1<<bits)
	for shift := 0; shift < 64; shift += bits {
		clear(count)
		for _, h := range hashes {
			count[h>>shift&mask]++
		}
		var sum int32
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, o := range order {
			d := hashes[o] >> shift & mask
			tmp[count[d]] = o
			count[d]++
		}
		order, tmp = tmp, order
	}
	return order
}

func (s *Snapshot) sliceOrNil(collector, job string) *Slice {
	if s == nil {
		return nil
	}
	return s.Slice(collector, job)
}
