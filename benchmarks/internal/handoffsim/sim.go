// Package handoffsim measures what a change of the collector set costs in
// scrapes: it runs the allocator (with or without its make-before-break
// handoff) against simulated collectors that poll it at their own phase
// and apply what they got after a delay, as the OpenTelemetry Collector's
// Prometheus receiver does (its discovery and scrape managers apply updates
// at most every 5 s each), and records, per target, when some collector was
// scraping it.
package handoffsim

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/shardwise/shardwise/allocation"
)

// Config is one simulation.
type Config struct {
	Targets, Collectors int
	// Poll is the collectors' poll interval (the receiver's http_sd
	// refresh_interval; 30 s by default).
	Poll time.Duration
	// Latency bounds the delay from a poll to the change of what the
	// collector scrapes: each poll's delay is uniform in [0, Latency].
	Latency time.Duration
	// Handoff runs the allocator's handoff with Settle; off, a collector is
	// served only what it owns.
	Handoff bool
	Settle  time.Duration
	// Terminating is how long a collector keeps running after its pod is
	// told to stop (a preStop sleep; the Collector itself exits within a
	// second or two). With the handoff a terminating collector is drained;
	// without it, it stays a collector for Grace (the not-ready grace
	// period) while it no longer scrapes once Terminating has passed.
	Terminating, Grace time.Duration
	Seed               uint64
}

// Figures are what one scenario cost.
type Figures struct {
	Scenario string `json:"scenario"`
	Handoff  bool   `json:"handoff"`
	// Moved counts the targets whose owner changed at least once.
	Moved int `json:"moved"`
	// LongestGapS is the longest time, in seconds, any target had no
	// collector scraping it.
	LongestGapS float64 `json:"longest_gap_s"`
	// OverlapS is the target-seconds during which two or more collectors
	// scraped one target (each one beyond the first counted).
	OverlapS float64 `json:"overlap_target_s"`
}

const tick = 500 * time.Millisecond

// sim is one run: the allocator, what each collector scrapes, and the
// collectors' pending updates.
type sim struct {
	cfg     Config
	rng     *rand.Rand
	now     time.Time
	alloc   *allocation.Allocator
	handoff *allocation.Handoff
	targets []*allocation.Target

	phase   map[string]time.Duration   // when in each Poll a collector polls
	active  map[string]map[uint64]bool // what each collector scrapes
	pending map[string][]pendingUpdate // polled sets not applied yet
	running map[string]bool            // collectors whose process runs
	stopAt  map[string]time.Time       // when a terminating collector exits
	cover   map[uint64]int             // collectors scraping each target
	gapFrom map[uint64]time.Time       // since when a target is uncovered
	owners  map[uint64]map[string]bool // every owner a target had
	figures Figures
	events  []event // scheduled changes, run in order of time
}

type event struct {
	at time.Time
	fn func()
}

type pendingUpdate struct {
	at  time.Time
	set map[uint64]bool
}

// Run runs scenario ("join", "scale-down" or "rolling-restart") and returns
// its figures.
func Run(scenario string, cfg Config) (Figures, error) {
	s := &sim{
		cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 7)), now: epoch,
		phase: map[string]time.Duration{}, active: map[string]map[uint64]bool{},
		pending: map[string][]pendingUpdate{}, running: map[string]bool{}, stopAt: map[string]time.Time{},
		cover: map[uint64]int{}, gapFrom: map[uint64]time.Time{}, owners: map[uint64]map[string]bool{},
	}
	s.figures = Figures{Scenario: scenario, Handoff: cfg.Handoff}
	var err error
	if s.alloc, err = allocation.New(allocation.Options{Strategy: allocation.ConsistentHashing}); err != nil {
		return Figures{}, err
	}
	if cfg.Handoff {
		s.handoff = allocation.NewHandoff(s.alloc, allocation.HandoffOptions{Settle: cfg.Settle, Now: func() time.Time { return s.now }})
	}
	for i := range cfg.Targets {
		addr := "10.0." + strconv.Itoa(i>>8) + "." + strconv.Itoa(i&255) + ":9100"
		s.targets = append(s.targets, &allocation.Target{Job: "job", Hash: xxhash.Sum64String(addr), Address: addr})
	}
	s.alloc.SetJobTargets(map[string][]*allocation.Target{"job": s.targets})
	names := make([]string, cfg.Collectors)
	for i := range names {
		names[i] = "collector-" + strconv.Itoa(i)
		s.start(names[i])
	}
	s.setCollectors(names, nil)
	// Steady state: every collector has polled and applied.
	s.run(cfg.Poll + cfg.Latency + tick)
	for _, t := range s.targets {
		if s.cover[t.Hash] != 1 {
			return Figures{}, fmt.Errorf("handoffsim: target %s scraped by %d collectors before the change", t.Address, s.cover[t.Hash])
		}
	}
	clear(s.owners)
	s.recordOwners()
	s.figures.LongestGapS, s.figures.OverlapS = 0, 0
	settle := 3*cfg.Poll + 2*cfg.Latency + 4*cfg.Settle + cfg.Terminating + cfg.Grace
	switch scenario {
	case "join":
		joiner := "collector-" + strconv.Itoa(cfg.Collectors)
		s.start(joiner)
		s.setCollectors(append(slices.Clone(names), joiner), nil)
		s.run(settle)
	case "scale-down":
		s.terminate(names[len(names)-1], names[:len(names)-1], false)
		s.run(settle)
	case "rolling-restart":
		for _, n := range names {
			s.terminate(n, names, true)
			s.run(settle)
		}
	default:
		return Figures{}, fmt.Errorf("handoffsim: unknown scenario %q", scenario)
	}
	s.finish()
	return s.figures, nil
}

// terminate starts the termination of collector name's pod; the set is
// names without it, until (when back) the pod is recreated under the same
// name and ready 10 s after the old one exited. With the handoff the
// terminating collector is drained at once and gone when it exits; without,
// it stays a collector for the not-ready grace period (and never leaves when
// it is back within it).
func (s *sim) terminate(name string, names []string, back bool) {
	rest := slices.DeleteFunc(slices.Clone(names), func(x string) bool { return x == name })
	exit := s.now.Add(s.cfg.Terminating)
	s.stopAt[name] = exit
	ready := exit.Add(10 * time.Second)
	if s.cfg.Handoff {
		s.setCollectors(rest, []string{name})
		s.at(exit, func() { s.setCollectors(rest, nil) })
	} else if !back || ready.After(s.now.Add(s.cfg.Grace)) {
		s.at(s.now.Add(s.cfg.Grace), func() { s.setCollectors(rest, nil) })
	}
	if back {
		s.at(ready, func() {
			s.start(name)
			s.setCollectors(names, nil)
		})
	}
}

// at schedules fn at t.
func (s *sim) at(t time.Time, fn func()) { s.events = append(s.events, event{t, fn}) }

// setCollectors gives the allocator the collector set.
func (s *sim) setCollectors(names, draining []string) {
	cs := make([]allocation.Collector, 0, len(names)+len(draining))
	for _, n := range names {
		cs = append(cs, allocation.Collector{Name: n})
	}
	for _, n := range draining {
		cs = append(cs, allocation.Collector{Name: n, Draining: true})
	}
	s.alloc.SetCollectors(cs)
	s.recordOwners()
}

// start starts collector name's process with a random phase.
func (s *sim) start(name string) {
	s.running[name] = true
	s.phase[name] = time.Duration(s.rng.Int64N(int64(s.cfg.Poll/tick))) * tick
	delete(s.stopAt, name)
}

func (s *sim) snapshot() *allocation.Snapshot {
	if s.handoff != nil {
		return s.handoff.Snapshot()
	}
	return s.alloc.Snapshot()
}

var epoch = time.Unix(1_700_000_000, 0)

// run advances the simulation by d, tick by tick.
func (s *sim) run(d time.Duration) {
	end := s.now.Add(d)
	for s.now.Before(end) {
		s.now = s.now.Add(tick)
		for _, name := range slices.Sorted(maps.Keys(s.stopAt)) {
			if !s.now.Before(s.stopAt[name]) && s.running[name] {
				s.stop(name)
			}
		}
		slices.SortStableFunc(s.events, func(a, b event) int { return a.at.Compare(b.at) })
		for len(s.events) > 0 && !s.now.Before(s.events[0].at) {
			e := s.events[0]
			s.events = s.events[1:]
			e.fn()
		}
		s.poll()
		for _, name := range slices.Sorted(maps.Keys(s.pending)) {
			ups := s.pending[name]
			for len(ups) > 0 && !s.now.Before(ups[0].at) {
				s.apply(name, ups[0].set)
				ups = ups[1:]
			}
			s.pending[name] = ups
		}
		s.account()
	}
}

// poll makes the collectors whose phase it is poll the allocator.
func (s *sim) poll() {
	snap := s.snapshot()
	for _, name := range slices.Sorted(maps.Keys(s.running)) {
		if !s.running[name] || s.now.Sub(epoch)%s.cfg.Poll != s.phase[name] {
			continue
		}
		set := map[uint64]bool{}
		if sl := snap.Slice(name, "job"); sl != nil {
			for _, t := range sl.Targets {
				set[t.Hash] = true
			}
		}
		if s.handoff != nil {
			s.handoff.Polled(name, "job", snap)
		}
		delay := time.Duration(s.rng.Int64N(int64(s.cfg.Latency/tick)+1)) * tick
		s.pending[name] = append(s.pending[name], pendingUpdate{at: s.now.Add(delay), set: set})
	}
}

// recordOwners notes every target's owner in the allocator's assignment.
func (s *sim) recordOwners() {
	base := s.alloc.Snapshot()
	for _, t := range s.targets {
		if o, ok := base.Lookup(t.Hash); ok {
			if s.owners[t.Hash] == nil {
				s.owners[t.Hash] = map[string]bool{}
			}
			s.owners[t.Hash][o] = true
		}
	}
}

// apply makes collector name scrape set.
func (s *sim) apply(name string, set map[uint64]bool) {
	for h := range s.active[name] {
		if !set[h] {
			s.cover[h]--
		}
	}
	for h := range set {
		if !s.active[name][h] {
			s.cover[h]++
		}
	}
	s.active[name] = set
}

// stop ends collector name's process: it scrapes nothing and polls no more.
func (s *sim) stop(name string) {
	s.apply(name, nil)
	delete(s.running, name)
	delete(s.pending, name)
	delete(s.stopAt, name)
}

// account adds one tick to the gap and overlap figures.
func (s *sim) account() {
	for _, t := range s.targets {
		c := s.cover[t.Hash]
		if c > 1 {
			s.figures.OverlapS += float64(c-1) * tick.Seconds()
		}
		from, open := s.gapFrom[t.Hash]
		switch {
		case c == 0 && !open:
			s.gapFrom[t.Hash] = s.now.Add(-tick)
		case c > 0 && open:
			s.closeGap(t.Hash, from)
		}
	}
}

func (s *sim) closeGap(h uint64, from time.Time) {
	if g := s.now.Sub(from).Seconds(); g > s.figures.LongestGapS {
		s.figures.LongestGapS = g
	}
	delete(s.gapFrom, h)
}

// finish closes the gaps still open and counts the moved targets.
func (s *sim) finish() {
	for h, from := range s.gapFrom {
		s.closeGap(h, from)
	}
	for _, os := range s.owners {
		if len(os) > 1 {
			s.figures.Moved++
		}
	}
}
