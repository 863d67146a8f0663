package scenario

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/shardwise/shardwise/benchmarks/internal/strategy"
)

// Scenario is a named sequence of changes. Build is deterministic for a
// Config, so every strategy sees the same inputs.
type Scenario struct {
	Name        string
	Description string
	Build       func(Config) []Change
}

// All lists the scenarios in report order.
func All() []Scenario {
	return []Scenario{
		{"scale", "Scale up one collector at a time from 3 to 30, then back down to 3, the newest leaving first as a StatefulSet scales down.", buildScale},
		{"restart", "A rolling restart: every collector in turn leaves and returns with the same name.", buildRestart},
		{"churn", "Target churn: five times 1% of the targets replaced by new ones, then five times 10%.", buildChurn},
		{"job", "A job with 10% more targets is added and removed; then the first job is removed and restored.", buildJob},
		{"trace", "A seeded random trace of mixed steps: joins, leaves, returns, churn, growth, shrinkage, jobs added and removed.", buildTrace},
	}
}

// Lookup returns the scenario of that name.
func Lookup(name string) (Scenario, error) {
	for _, s := range All() {
		if s.Name == name {
			return s, nil
		}
	}
	names := make([]string, 0, 5)
	for _, s := range All() {
		names = append(names, s.Name)
	}
	return Scenario{}, fmt.Errorf("scenario %q: unknown (want all or one of %v)", name, names)
}

// Result is one scenario run for one strategy.
type Result struct {
	Scenario string `json:"scenario"`
	Strategy string `json:"strategy"`
	Steps    []Step `json:"steps"`
	// Drift counts targets present after the first step and at the end whose
	// collector differs: 0 means the scenario left no trace (restart, scale
	// back down, a job added and removed) for a strategy that is a pure
	// function of its inputs.
	Drift int `json:"drift"`
}

// Run runs the scenario for a fresh strategy from f.
func Run(sc Scenario, f strategy.Factory, cfg Config) (Result, error) {
	return RunChanges(sc.Name, sc.Build(cfg), f, cfg)
}

// RunChanges runs prepared changes (Scenario.Build) for a fresh strategy.
func RunChanges(name string, changes []Change, f strategy.Factory, cfg Config) (Result, error) {
	s, err := f.New()
	if err != nil {
		return Result{}, err
	}
	r := NewRunner(s, cfg.Epsilon)
	res := Result{Scenario: name, Strategy: s.Name(), Steps: make([]Step, 0, len(changes))}
	var start map[uint64]string
	for i, c := range changes {
		res.Steps = append(res.Steps, r.Apply(c))
		if i == 0 {
			start = r.Owners()
		}
	}
	res.Drift = Diff(start, r.Owners())
	return res, nil
}

func assign(w *Workload, names []string) Change {
	return Change{Kind: "assign", Note: strconv.Itoa(len(names)) + " collectors", Collectors: names, Jobs: w.Jobs()}
}

func buildScale(cfg Config) []Change {
	w := NewWorkload(cfg.Targets, cfg.Jobs, cfg.Seed)
	out := []Change{assign(w, Names(3))}
	for n := 4; n <= 30; n++ {
		names := Names(n)
		out = append(out, Change{Kind: "join", Note: names[n-1], Collectors: names})
	}
	for n := 29; n >= 3; n-- {
		out = append(out, Change{Kind: "leave", Note: "collector-" + strconv.Itoa(n), Collectors: Names(n)})
	}
	return out
}

func buildRestart(cfg Config) []Change {
	w := NewWorkload(cfg.Targets, cfg.Jobs, cfg.Seed)
	names := Names(cfg.Collectors)
	out := []Change{assign(w, names)}
	for i, name := range names {
		rest := slices.Delete(slices.Clone(names), i, i+1)
		out = append(out,
			Change{Kind: "leave", Note: name, Collectors: rest},
			Change{Kind: "return", Note: name, Collectors: names})
	}
	return out
}

func buildChurn(cfg Config) []Change {
	w := NewWorkload(cfg.Targets, cfg.Jobs, cfg.Seed)
	out := []Change{assign(w, Names(cfg.Collectors))}
	for _, f := range []float64{0.01, 0.01, 0.01, 0.01, 0.01, 0.10, 0.10, 0.10, 0.10, 0.10} {
		out = append(out, Change{Kind: "churn", Note: fmt.Sprintf("%g%%", f*100), Jobs: w.Churn(f)})
	}
	return out
}

func buildJob(cfg Config) []Change {
	w := NewWorkload(cfg.Targets, cfg.Jobs, cfg.Seed)
	out := []Change{assign(w, Names(cfg.Collectors))}
	out = append(out, Change{Kind: "add-job", Note: "job-new", Jobs: w.AddJob("job-new", max(1, cfg.Targets/10))})
	removeNew, _ := w.RemoveJob("job-new")
	out = append(out, Change{Kind: "remove-job", Note: "job-new", Jobs: removeNew})
	first := w.JobNames()[0]
	remove, had := w.RemoveJob(first)
	out = append(out, Change{Kind: "remove-job", Note: first, Jobs: remove})
	out = append(out, Change{Kind: "add-job", Note: first + " (restored)", Jobs: w.RestoreJob(had)})
	return out
}

// traceKinds are the kinds of step of the random trace, with their weights.
var traceKinds = []struct {
	kind   string
	weight int
}{{"join", 18}, {"leave", 15}, {"return", 10}, {"churn", 25}, {"grow", 8}, {"shrink", 8}, {"add-job", 8}, {"remove-job", 8}}

// buildTrace draws cfg.TraceSteps steps. The collector count stays within
// [2, 3·Collectors] and the target count within [T/2, 2T].
func buildTrace(cfg Config) []Change {
	w := NewWorkload(cfg.Targets, cfg.Jobs, cfg.Seed+1)
	tr := &trace{cfg: cfg, w: w, rng: w.Rand(), names: Names(cfg.Collectors), nextName: cfg.Collectors}
	out := []Change{assign(w, tr.names)}
	total := 0
	for _, k := range traceKinds {
		total += k.weight
	}
	for len(out) < cfg.TraceSteps+1 {
		x := tr.rng.IntN(total)
		kind := ""
		for _, k := range traceKinds {
			if x < k.weight {
				kind = k.kind
				break
			}
			x -= k.weight
		}
		if c, ok := tr.step(kind); ok {
			out = append(out, c)
		}
	}
	return out
}

// trace is the state of buildTrace's random walk. Every draw comes from
// rng, the workload's own generator, in a fixed order: the trace is a
// function of the Config.
type trace struct {
	cfg      Config
	w        *Workload
	rng      *rand.Rand
	names    []string // the collectors present; replaced, never modified
	nextName int      // the ordinal of the next new collector
	gone     []string // collectors that left and may return
	jobs     int      // jobs the trace has added
}

// step draws a change of that kind; ok is false when the kind is out of
// bounds now (the step is drawn again).
func (tr *trace) step(kind string) (c Change, ok bool) {
	switch kind {
	case "join", "leave", "return":
		return tr.collectorStep(kind)
	default:
		return tr.targetStep(kind)
	}
}

// collectorStep draws a collector joining, leaving, or returning after it
// left.
func (tr *trace) collectorStep(kind string) (Change, bool) {
	switch kind {
	case "join":
		if len(tr.names) >= 3*tr.cfg.Collectors {
			return Change{}, false
		}
		name := "collector-" + strconv.Itoa(tr.nextName)
		tr.nextName++
		tr.names = append(slices.Clone(tr.names), name)
		return Change{Kind: kind, Note: name, Collectors: tr.names}, true
	case "leave":
		if len(tr.names) <= 2 {
			return Change{}, false
		}
		i := tr.rng.IntN(len(tr.names))
		tr.gone = append(tr.gone, tr.names[i])
		c := Change{Kind: kind, Note: tr.names[i], Collectors: slices.Delete(slices.Clone(tr.names), i, i+1)}
		tr.names = c.Collectors
		return c, true
	case "return":
		if len(tr.gone) == 0 || len(tr.names) >= 3*tr.cfg.Collectors {
			return Change{}, false
		}
		i := tr.rng.IntN(len(tr.gone))
		name := tr.gone[i]
		tr.gone = slices.Delete(tr.gone, i, i+1)
		tr.names = append(slices.Clone(tr.names), name)
		return Change{Kind: kind, Note: name, Collectors: tr.names}, true
	}
	return Change{}, false
}

// targetStep draws a change of the targets: churn, growth, shrinkage, or a
// job added or removed.
func (tr *trace) targetStep(kind string) (Change, bool) {
	targets := tr.w.Len()
	switch kind {
	case "churn":
		f := 0.001 + tr.rng.Float64()*0.049
		return Change{Kind: kind, Note: fmt.Sprintf("%.1f%%", f*100), Jobs: tr.w.Churn(f)}, true
	case "grow":
		if targets >= 2*tr.cfg.Targets {
			return Change{}, false
		}
		f := 0.005 + tr.rng.Float64()*0.015
		return Change{Kind: kind, Note: fmt.Sprintf("%.1f%%", f*100), Jobs: tr.w.Grow(f)}, true
	case "shrink":
		if targets <= tr.cfg.Targets/2 {
			return Change{}, false
		}
		f := 0.005 + tr.rng.Float64()*0.015
		return Change{Kind: kind, Note: fmt.Sprintf("%.1f%%", f*100), Jobs: tr.w.Shrink(f)}, true
	case "add-job":
		if targets >= 2*tr.cfg.Targets {
			return Change{}, false
		}
		job := "trace-job-" + strconv.Itoa(tr.jobs)
		tr.jobs++
		n := 1 + tr.rng.IntN(max(1, tr.cfg.Targets/20))
		return Change{Kind: kind, Note: job, Jobs: tr.w.AddJob(job, n)}, true
	case "remove-job":
		all := tr.w.JobNames()
		if targets <= tr.cfg.Targets/2 || len(all) <= 2 {
			return Change{}, false
		}
		job := all[tr.rng.IntN(len(all))]
		change, _ := tr.w.RemoveJob(job)
		return Change{Kind: kind, Note: job, Jobs: change}, true
	}
	return Change{}, false
}
