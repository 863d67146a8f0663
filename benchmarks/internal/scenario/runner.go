package scenario

import (
	"math"
	"slices"
	"time"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/benchmarks/internal/strategy"
)

// Change is one step of a scenario, the same for every strategy.
type Change struct {
	// Kind is assign, join, leave, return, churn, grow, shrink, add-job or
	// remove-job.
	Kind string
	// Note says what changed ("collector-4", "1%", "job-7").
	Note string
	// Collectors, when not nil, is the new collector set.
	Collectors []string
	// Jobs, when not nil, is passed to SetJobTargets (after SetCollectors).
	Jobs map[string][]*allocation.Target
}

// Step is what one change did to one strategy.
//
// Moved counts targets present before and after the step whose collector
// changed (a target that was assigned and is now unassigned counts too);
// targets added or removed by the step never count. Kept is the number of
// targets present before and after.
//
// Min is the least number of moves the step required, one definition for
// every strategy (it is allocation.Result.Min's, evaluated with the
// reference ε): the largest of
//   - left: kept targets whose collector left, which must move;
//   - join: ⌊T'·j/N'⌋ for j joining collectors, what the joiners must take
//     to reach the mean load T'/N' (at most the kept targets: on the first
//     assignment nothing can move);
//   - overload: Σ max(0, kept load − ⌈(1+ε)·T'/N'⌉) over the remaining
//     collectors that were within the bound ⌈(1+ε)·T/N⌉ before the step:
//     what they must shed to stay within it.
//
// T, N and T', N' are the targets and collectors before and after the step.
// left is a true lower bound for every strategy; join only for strategies
// that fill a joiner to the mean (otel-least-weighted gives it nothing);
// overload only for strategies that keep the bound. A collector already above
// the bound before the step belongs to a strategy that does not keep it, so
// nothing is demanded of it; for a strategy that always keeps the bound
// (shardwise's consistent-hashing) Min is exactly allocation.Result.Min.
type Step struct {
	Index      int     `json:"step"`
	Kind       string  `json:"kind"`
	Note       string  `json:"note,omitempty"`
	Targets    int     `json:"targets"`
	Collectors int     `json:"collectors"`
	Kept       int     `json:"kept"`
	Moved      int     `json:"moved"`
	Min        int     `json:"min"`
	MinLeft    int     `json:"min_left"`
	Balance    float64 `json:"balance"`
	Unassigned int     `json:"unassigned"`
	MS         float64 `json:"ms"`
	// AllocMoved and AllocMin are the allocator's own accounting
	// (allocation.Result), for shardwise's strategies only.
	AllocMoved *int `json:"alloc_moved,omitempty"`
	AllocMin   *int `json:"alloc_min,omitempty"`
}

// Runner applies changes to one strategy and measures each.
type Runner struct {
	s          strategy.Strategy
	eps        float64
	jobs       map[string][]*allocation.Target // what the strategy was given
	collectors []string
	owner      map[uint64]string // after the last measured step
	targets    int               // targets after the last measured step
	steps      int
}

// NewRunner drives s; eps is the reference load bound used for Min.
func NewRunner(s strategy.Strategy, eps float64) *Runner {
	if eps == 0 {
		eps = allocation.DefaultEpsilon
	}
	return &Runner{s: s, eps: eps, jobs: map[string][]*allocation.Target{}, owner: map[uint64]string{}}
}

// Strategy returns the strategy being driven.
func (r *Runner) Strategy() strategy.Strategy { return r.s }

// Collectors returns the current collector set. Do not modify.
func (r *Runner) Collectors() []string { return r.collectors }

// apply hands the change to the strategy and returns the time it took.
func (r *Runner) apply(c Change) time.Duration {
	if c.Collectors != nil {
		r.collectors = slices.Clone(c.Collectors)
	}
	for job, ts := range c.Jobs {
		if len(ts) == 0 {
			delete(r.jobs, job)
		} else {
			r.jobs[job] = ts
		}
	}
	start := time.Now()
	if c.Collectors != nil {
		r.s.SetCollectors(c.Collectors)
	}
	if c.Jobs != nil {
		r.s.SetJobTargets(c.Jobs)
	}
	return time.Since(start)
}

// Quiet applies a change without measuring it; the next Apply measures
// against the state of the last measured step. Use Sync to take the current
// state as the new reference.
func (r *Runner) Quiet(c Change) { r.apply(c) }

// Sync records the current assignment as the reference for the next step.
func (r *Runner) Sync() {
	owner, unassigned := r.assignment()
	r.owner, r.targets = owner, len(owner)+unassigned
}

// Owners returns the assignment after the last measured step or Sync. Do
// not modify.
func (r *Runner) Owners() map[uint64]string { return r.owner }

func (r *Runner) assignment() (map[uint64]string, int) {
	n := 0
	for _, ts := range r.jobs {
		n += len(ts)
	}
	owner := make(map[uint64]string, n)
	unassigned := 0
	for _, ts := range r.jobs {
		for _, t := range ts {
			if c, ok := r.s.Owner(t.Hash); ok {
				owner[t.Hash] = c
			} else {
				unassigned++
			}
		}
	}
	return owner, unassigned
}

// Apply hands the change to the strategy and measures the step.
func (r *Runner) Apply(c Change) Step {
	prev, prevCollectors := r.owner, r.collectors
	d := r.apply(c)
	owner, unassigned := r.assignment()

	st := Step{
		Index:      r.steps,
		Kind:       c.Kind,
		Note:       c.Note,
		Targets:    len(owner) + unassigned,
		Collectors: len(r.collectors),
		Unassigned: unassigned,
		MS:         float64(d.Nanoseconds()) / 1e6,
	}
	r.steps++

	present := make(map[string]bool, len(r.collectors))
	for _, name := range r.collectors {
		present[name] = true
	}
	joiners := 0
	had := make(map[string]bool, len(prevCollectors))
	for _, name := range prevCollectors {
		had[name] = true
	}
	for _, name := range r.collectors {
		if !had[name] {
			joiners++
		}
	}
	prevLoad := make(map[string]int, len(prevCollectors))
	for _, c := range prev {
		prevLoad[c]++
	}
	prevCap := Capacity(r.targets, len(prevCollectors), r.eps)
	keptLoad := make(map[string]int, len(r.collectors))
	for _, ts := range r.jobs {
		for _, t := range ts {
			p, ok := prev[t.Hash]
			if !ok {
				continue
			}
			st.Kept++
			if o, ok := owner[t.Hash]; !ok || o != p {
				st.Moved++
			}
			switch {
			case !present[p]:
				st.MinLeft++
			case prevLoad[p] <= prevCap:
				keptLoad[p]++
			}
		}
	}
	st.Min = Minimum(st.MinLeft, joiners, keptLoad, st.Kept, st.Targets, len(r.collectors), r.eps)
	st.Balance = Balance(Loads(owner, r.collectors))
	if rep, ok := r.s.(strategy.Reporter); ok {
		res := rep.Last()
		st.AllocMoved, st.AllocMin = &res.Moved, &res.Min
	}
	r.owner, r.targets = owner, st.Targets
	return st
}

// Minimum is the step minimum described on Step: the largest of the kept
// targets that left with their collector, the joiners' share of the mean and
// the overload above the load bound. kept is the number of targets present
// before and after the step; keptLoad holds, per remaining collector
// that was within the bound before the step, the kept targets it had.
func Minimum(left, joiners int, keptLoad map[string]int, kept, targets, collectors int, eps float64) int {
	m := left
	if collectors == 0 {
		return m
	}
	m = max(m, min(kept, targets*joiners/collectors))
	capa, over := Capacity(targets, collectors, eps), 0
	for _, l := range keptLoad {
		over += max(0, l-capa)
	}
	return max(m, over)
}

// Capacity is the load bound ⌈(1+ε)·T/N⌉, computed as the allocation
// package computes it.
func Capacity(targets, collectors int, eps float64) int {
	if collectors == 0 {
		return 0
	}
	c := int(math.Ceil((1+eps)*float64(targets)/float64(collectors) - 1e-9))
	return max(c, (targets+collectors-1)/collectors)
}

// Loads counts the targets of each collector, in the order of collectors.
func Loads(owner map[uint64]string, collectors []string) []int {
	idx := make(map[string]int, len(collectors))
	for i, c := range collectors {
		idx[c] = i
	}
	loads := make([]int, len(collectors))
	for _, c := range owner {
		if i, ok := idx[c]; ok {
			loads[i]++
		}
	}
	return loads
}

// Balance is the busiest collector's load over the mean load: 1 is perfect,
// 0 when there are no targets or no collectors.
func Balance(loads []int) float64 {
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

// Diff counts targets in both assignments whose collector differs.
func Diff(before, after map[uint64]string) int {
	n := 0
	for h, c := range before {
		if a, ok := after[h]; ok && a != c {
			n++
		}
	}
	return n
}
