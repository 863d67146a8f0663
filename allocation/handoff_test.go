package allocation

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a settable clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *fakeClock               { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

// holders maps every target served by s to the collectors (draining ones
// included) it is served to.
func holders(s *Snapshot) map[uint64][]string {
	out := map[uint64][]string{}
	for _, c := range slices.Concat(s.Collectors(), s.Draining()) {
		for _, job := range s.Jobs() {
			if sl := s.Slice(c, job); sl != nil {
				for _, t := range sl.Targets {
					out[t.Hash] = append(out[t.Hash], c)
				}
			}
		}
	}
	return out
}

func newHandoffAllocator(t *testing.T, collectors, targets int, opts HandoffOptions) (*Allocator, *Handoff) {
	t.Helper()
	a := mustNew(t, Options{Strategy: ConsistentHashing})
	a.SetCollectors(makeCollectors(collectors))
	a.SetJobTargets(makeTargets(targets, 2, "handoff"))
	return a, NewHandoff(a, opts)
}

// TestHandoffJoin: a target that moves (to the joiner, or between others as
// the load bound shifts) is served to its new owner at once and to its
// previous owner until the new owner polls its job.
func TestHandoffJoin(t *testing.T) {
	clock := newClock()
	a, h := newHandoffAllocator(t, 3, 1000, HandoffOptions{Now: clock.now})
	before := assignment(h.Snapshot())

	a.SetCollectors(makeCollectors(4))
	s := h.Snapshot()
	after := assignment(a.Snapshot())
	served := holders(s)
	moves := 0
	for hash, prev := range before {
		now := after[hash]
		if now == prev {
			require.Equal(t, []string{now}, served[hash], "an unmoved target is served once")
			continue
		}
		moves++
		require.ElementsMatch(t, []string{prev, now}, served[hash], "a moved target is served to both owners")
	}
	require.Positive(t, moves)
	require.Equal(t, moves, h.Stats().Lingering)
	require.Equal(t, a.Snapshot().Loads(), s.Loads(), "loads count a lingering target once")

	// Every collector polls job-0: that job's previous owners are
	// released, job-1's are not.
	clock.add(time.Second)
	for _, c := range s.Collectors() {
		h.Polled(c, "job-0", s)
	}
	for hash, c := range holders(h.Snapshot()) {
		if len(c) > 1 {
			require.Equal(t, "job-1", jobOf(a.Snapshot(), hash))
		}
	}
	for _, c := range s.Collectors() {
		h.Polled(c, "job-1", s)
	}
	for hash, c := range holders(h.Snapshot()) {
		require.Len(t, c, 1, "target %x", hash)
	}
	st := h.Stats()
	require.Zero(t, st.Lingering)
	require.Equal(t, uint64(moves), st.Moves)
	require.Equal(t, uint64(moves), st.ReleasedByPoll)
	require.InDelta(t, float64(moves), st.OverlapSeconds, 1e-9, "every pair lingered one second")
}

func jobOf(s *Snapshot, hash uint64) string {
	for _, c := range s.Collectors() {
		for _, job := range s.Jobs() {
			if sl := s.Slice(c, job); sl != nil {
				for _, t := range sl.Targets {
					if t.Hash == hash {
						return job
					}
				}
			}
		}
	}
	return ""
}

// TestHandoffStalePollAndSettle: a poll answered from a snapshot before the
// move, or sooner than Settle after it, releases nothing; the first poll at
// least Settle after the move releases the previous owners Settle later.
func TestHandoffStalePollAndSettle(t *testing.T) {
	clock := newClock()
	a, h := newHandoffAllocator(t, 3, 500, HandoffOptions{Now: clock.now, Settle: 5 * time.Second})
	stale := h.Snapshot()
	a.SetCollectors(makeCollectors(4))
	s := h.Snapshot()
	lingering := h.Stats().Lingering
	require.Positive(t, lingering)

	pollAll := func(snap *Snapshot) {
		for _, c := range snap.Collectors() {
			h.Polled(c, "job-0", snap)
			h.Polled(c, "job-1", snap)
		}
	}
	pollAll(stale)
	require.Equal(t, lingering, h.Stats().Lingering, "a poll of the snapshot before the move")

	clock.add(4 * time.Second)
	pollAll(s)
	require.Equal(t, lingering, h.Stats().Lingering, "a poll within Settle")

	clock.add(time.Second)
	pollAll(s)
	require.Equal(t, lingering, h.Stats().Lingering, "the new owners hold the targets: Settle to start scraping them")
	clock.add(5*time.Second - time.Millisecond)
	require.Equal(t, lingering, h.Stats().Lingering)
	clock.add(time.Millisecond)
	require.Zero(t, h.Stats().Lingering)
	require.Equal(t, uint64(lingering), h.Stats().ReleasedByPoll)
}

// TestHandoffTimeout: without a poll by the new owner, the previous owner
// keeps a moved target for two of the new owner's observed poll intervals
// (two DefaultPollInterval before it has polled twice).
func TestHandoffTimeout(t *testing.T) {
	clock := newClock()
	a, h := newHandoffAllocator(t, 3, 500, HandoffOptions{Now: clock.now})
	h.Snapshot()
	a.SetCollectors(makeCollectors(4))
	require.Positive(t, h.Stats().Lingering)
	clock.add(2*DefaultPollInterval - time.Millisecond)
	h.Snapshot()
	require.Positive(t, h.Stats().Lingering)
	clock.add(time.Millisecond)
	h.Snapshot()
	require.Zero(t, h.Stats().Lingering)
	require.Positive(t, h.Stats().ReleasedByTimeout)

}

// TestHandoffObservedInterval: the default bound is two of the new owner's
// poll intervals as observed, two DefaultPollInterval for a collector not
// seen polling twice.
func TestHandoffObservedInterval(t *testing.T) {
	clock := newClock()
	a, h := newHandoffAllocator(t, 30, 1500, HandoffOptions{Now: clock.now})
	s := h.Snapshot()
	for range 2 {
		for _, c := range s.Collectors() {
			h.Polled(c, "job-9", s) // unknown job: not remembered
			h.Polled(c, "job-0", s)
		}
		clock.add(5 * time.Second)
	}
	h.Polled("collector-7", "job-0", s) // unknown collector: not remembered
	a.SetCollectors(makeCollectors(31))
	h.Snapshot()
	toOld, toNew := 0, 0
	for _, c := range holders(h.Snapshot()) {
		switch {
		case len(c) == 2 && slices.Contains(c, "collector-30"):
			toNew++
		case len(c) == 2:
			toOld++
		}
	}
	require.Positive(t, toOld, "the bound shifts some targets between the old collectors")
	require.Positive(t, toNew)
	clock.add(10*time.Second - time.Millisecond)
	require.Equal(t, toOld+toNew, h.Stats().Lingering)
	clock.add(time.Millisecond)
	require.Equal(t, toNew, h.Stats().Lingering, "moves to a collector polling every 5 s end after 10 s")
	clock.add(2*DefaultPollInterval - 10*time.Second)
	require.Zero(t, h.Stats().Lingering, "moves to one not seen polling end after 2 default intervals")
}

// TestHandoffLeave: the targets of a collector that leaves go to the others
// at once and linger nowhere (what moves between the others as the load
// bound shifts does); a target no longer discovered stops lingering.
func TestHandoffLeave(t *testing.T) {
	clock := newClock()
	a, h := newHandoffAllocator(t, 4, 500, HandoffOptions{Now: clock.now})
	before := assignment(h.Snapshot())
	a.SetCollectors(makeCollectors(3))
	served := holders(h.Snapshot())
	orphans := 0
	for hash, prev := range before {
		if prev == "collector-3" {
			orphans++
			require.Len(t, served[hash], 1)
			require.NotEqual(t, "collector-3", served[hash][0])
		}
	}
	require.Positive(t, orphans)

	a.SetCollectors(makeCollectors(4))
	require.Positive(t, h.Stats().Lingering)
	a.SetJobTargets(map[string][]*Target{"job-0": nil, "job-1": nil})
	require.Zero(t, h.Stats().Lingering)
}

// TestHandoffReplicas is the consistency of two allocator replicas behind
// one Service: the second sees the collector change up to skew later, and
// collectors poll either at random. With Settle at least the skew, every
// target is always held by some collector (each collector holds what its
// latest poll of each job returned); with no handoff, or Settle 0, some
// target is held by none.
func TestHandoffReplicas(t *testing.T) {
	const skew = 4 * time.Second
	for _, tc := range []struct {
		name    string
		handoff bool
		settle  time.Duration
		gapFree bool
	}{
		{"no handoff", false, 0, false},
		{"handoff, settle 0", true, 0, false},
		{"handoff, settle = skew", true, skew, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gaps := 0
			for seed := range uint64(20) {
				gaps += replicaRun(t, seed, skew, tc.handoff, tc.settle)
			}
			if tc.gapFree {
				require.Zero(t, gaps, "targets held by no collector")
			} else {
				require.Positive(t, gaps, "the run must show the gap the setting leaves")
			}
		})
	}
}

// replicaRun runs one randomized scale-up seen by two replicas and returns
// how many (step, target) pairs no collector held.
func replicaRun(t *testing.T, seed uint64, skew time.Duration, handoff bool, settle time.Duration) int {
	t.Helper()
	clock := newClock()
	rng := rand.New(rand.NewPCG(seed, 1))
	targets := makeTargets(200, 1, "replicas")
	type replica struct {
		a *Allocator
		h *Handoff
	}
	var reps [2]replica
	for i := range reps {
		a := mustNew(t, Options{Strategy: ConsistentHashing})
		a.SetCollectors(makeCollectors(3))
		a.SetJobTargets(targets)
		reps[i] = replica{a, NewHandoff(a, HandoffOptions{Now: clock.now, Settle: settle})}
	}
	serve := func(r replica) *Snapshot {
		if handoff {
			return r.h.Snapshot()
		}
		return r.a.Snapshot()
	}
	held := map[string]map[uint64]bool{}
	poll := func(c string) {
		r := reps[rng.IntN(2)]
		s := serve(r)
		held[c] = map[uint64]bool{}
		if sl := s.Slice(c, "job-0"); sl != nil {
			for _, tg := range sl.Targets {
				held[c][tg.Hash] = true
			}
		}
		if handoff {
			r.h.Polled(c, "job-0", s)
		}
	}
	for _, c := range makeCollectors(4) {
		poll(c.Name)
	}
	// Each collector polls every 2 s at its own phase, a replica at random.
	phase := map[string]time.Duration{}
	for _, c := range makeCollectors(4) {
		phase[c.Name] = time.Duration(rng.IntN(4)) * 500 * time.Millisecond
	}
	gaps := 0
	const moveAt, period = 10 * time.Second, 2 * time.Second
	for step := time.Duration(0); step < 60*time.Second; step += 500 * time.Millisecond {
		if step == moveAt {
			reps[0].a.SetCollectors(makeCollectors(4))
		}
		if step == moveAt+skew {
			reps[1].a.SetCollectors(makeCollectors(4))
		}
		clock.add(500 * time.Millisecond)
		for _, c := range makeCollectors(4) {
			if (step+phase[c.Name])%period == 0 {
				poll(c.Name)
			}
		}
		for _, tg := range targets["job-0"] {
			if !held["collector-0"][tg.Hash] && !held["collector-1"][tg.Hash] &&
				!held["collector-2"][tg.Hash] && !held["collector-3"][tg.Hash] {
				gaps++
			}
		}
	}
	return gaps
}

// TestHandoffDraining: a collector on its way out (its pod terminating)
// gets no targets, and keeps being served what it held until the new owners
// have polled; once it is gone (its pod deleted) nothing lingers with it.
func TestHandoffDraining(t *testing.T) {
	clock := newClock()
	a, h := newHandoffAllocator(t, 4, 500, HandoffOptions{Now: clock.now, Settle: time.Second})
	before := assignment(h.Snapshot())
	cs := makeCollectors(4)
	cs[3].Draining = true
	a.SetCollectors(cs)
	s := h.Snapshot()
	require.Equal(t, []string{"collector-3"}, s.Draining())
	require.NotContains(t, s.Collectors(), "collector-3")
	require.Zero(t, a.Snapshot().Load("collector-3"))
	held := 0
	for hash, prev := range before {
		if prev != "collector-3" {
			continue
		}
		held++
		require.Contains(t, holders(s)[hash], "collector-3", "a draining collector keeps what it held")
		require.Len(t, holders(s)[hash], 2)
	}
	require.Positive(t, held)
	require.NotNil(t, s.Slice("collector-3", "job-0"))

	// The new owners poll; a second later the draining one is released.
	clock.add(time.Second)
	for _, c := range s.Collectors() {
		h.Polled(c, "job-0", s)
		h.Polled(c, "job-1", s)
	}
	clock.add(time.Second)
	s = h.Snapshot()
	require.Nil(t, s.Slice("collector-3", "job-0"))
	require.Nil(t, s.Slice("collector-3", "job-1"))

	// Drained again, then deleted: what it held stops lingering at once.
	a.SetCollectors(makeCollectors(4))
	h.Snapshot()
	a.SetCollectors(cs)
	require.Positive(t, h.Stats().Lingering)
	a.SetCollectors(makeCollectors(3))
	for _, c := range holders(h.Snapshot()) {
		require.NotContains(t, c, "collector-3")
	}
}

// TestHandoffConcurrent: servers' goroutines read snapshots and report
// polls while the allocator changes; run with -race (make test does).
// Every target stays served to some collector throughout.
func TestHandoffConcurrent(t *testing.T) {
	t.Parallel()
	a, h := newHandoffAllocator(t, 4, 400, HandoffOptions{Settle: time.Millisecond})
	done := make(chan struct{})
	errs := make(chan error, 8)
	for g := range 4 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				s := h.Snapshot()
				if n := len(holders(s)); n != 400 {
					errs <- fmt.Errorf("goroutine %d: %d of 400 targets served", g, n)
					return
				}
				for _, c := range s.Collectors() {
					h.Polled(c, "job-0", s)
					h.Polled(c, "job-1", s)
				}
			}
		}()
	}
	for i := range 200 {
		cs := makeCollectors(3 + i%3)
		if i%7 == 0 {
			cs[0].Draining = true
		}
		a.SetCollectors(cs)
		_ = h.Stats()
	}
	close(done)
	for range 4 {
		require.NoError(t, <-errs)
	}
}

// BenchmarkHandoffPoll is one poll's cost to the handoff (Snapshot, then
// Polled) right after a collector joined 100 at 100k targets, with ~1,000
// targets lingering, polls of collectors that are not the joiner releasing
// nothing.
func BenchmarkHandoffPoll(b *testing.B) {
	a := mustNew(b, Options{Strategy: ConsistentHashing})
	a.SetCollectors(makeCollectors(100))
	a.SetJobTargets(makeTargets(100_000, 100, "bench"))
	h := NewHandoff(a, HandoffOptions{Settle: time.Hour})
	h.Snapshot()
	a.SetCollectors(makeCollectors(101))
	s := h.Snapshot()
	b.ReportMetric(float64(h.Stats().Lingering), "lingering")
	cs := s.Collectors()
	jobs := s.Jobs()
	i := 0
	for b.Loop() {
		snap := h.Snapshot()
		h.Polled(cs[i%len(cs)], jobs[i%len(jobs)], snap)
		i++
	}
}

// TestHandoffPerNodeDrain: with per-node (a DaemonSet's collectors), the
// targets of a node whose collector is draining have no collector to go to:
// the draining one keeps them until its replacement on the node is ready
// and has polled, or the bound passes.
func TestHandoffPerNodeDrain(t *testing.T) {
	t.Parallel()
	clock := newClock()
	a := mustNew(t, Options{Strategy: PerNode})
	var ts []*Target
	for i, node := range []string{"n0", "n0", "n1"} {
		ts = append(ts, &Target{Job: "j", Hash: uint64(i + 1), Address: "10.0.0." + itoa(i) + ":9100", Node: node})
	}
	a.SetJobTargets(map[string][]*Target{"j": ts})
	a.SetCollectors([]Collector{{Name: "ds-a", Node: "n0"}, {Name: "ds-b", Node: "n1"}})
	h := NewHandoff(a, HandoffOptions{Now: clock.now, Settle: time.Second})
	h.Snapshot()

	// ds-a's pod is terminating: n0's targets have no collector, and stay
	// with ds-a.
	a.SetCollectors([]Collector{{Name: "ds-a", Node: "n0", Draining: true}, {Name: "ds-b", Node: "n1"}})
	s := h.Snapshot()
	require.Len(t, s.Unassigned(), 2)
	require.Len(t, s.Slice("ds-a", "j").Targets, 2)

	// Its replacement on n0 is ready: it owns them, ds-a keeps them until it
	// has polled (at least Settle after the move) and Settle more.
	clock.add(time.Second)
	a.SetCollectors([]Collector{{Name: "ds-a", Node: "n0", Draining: true}, {Name: "ds-b", Node: "n1"}, {Name: "ds-c", Node: "n0"}})
	s = h.Snapshot()
	require.Len(t, s.Slice("ds-c", "j").Targets, 2)
	require.Len(t, s.Slice("ds-a", "j").Targets, 2)
	clock.add(time.Second)
	h.Polled("ds-c", "j", s)
	clock.add(time.Second)
	require.Nil(t, h.Snapshot().Slice("ds-a", "j"))
	require.Zero(t, h.Stats().Lingering)
}

// TestHandoffForgetsPolls: the poll history of a collector that left, or of
// a job that is gone, is dropped.
func TestHandoffForgetsPolls(t *testing.T) {
	t.Parallel()
	a, h := newHandoffAllocator(t, 3, 100, HandoffOptions{})
	s := h.Snapshot()
	for _, c := range s.Collectors() {
		h.Polled(c, "job-0", s)
		h.Polled(c, "job-1", s)
	}
	a.SetCollectors(makeCollectors(2))
	a.SetJobTargets(map[string][]*Target{"job-1": nil})
	h.Snapshot()
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Len(t, h.polls, 2)
	for _, ps := range h.polls {
		require.Equal(t, []string{"job-0"}, slices.Collect(maps.Keys(ps.last)))
	}
}
