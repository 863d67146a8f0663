package scenario

import (
	"fmt"
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

// buildTrace draws cfg.TraceSteps steps. The collector count stays within
// [2, 3·Collectors] and the target count within [T/2, 2T].
func buildTrace(cfg Config) []Change {
	w := NewWorkload(cfg.Targets, cfg.Jobs, cfg.Seed+1)
	rng := w.Rand()
	names := Names(cfg.Collectors)
	nextName := cfg.Collectors
	var gone []string
	jobs := 0
	out := []Change{assign(w, names)}
	kinds := []struct {
		kind   string
		weight int
	}{{"join", 18}, {"leave", 15}, {"return", 10}, {"churn", 25}, {"grow", 8}, {"shrink", 8}, {"add-job", 8}, {"remove-job", 8}}
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	for len(out) < cfg.TraceSteps+1 {
		x := rng.IntN(total)
		kind := ""
		for _, k := range kinds {
			if x < k.weight {
				kind = k.kind
				break
			}
			x -= k.weight
		}
		T := w.Len()
		switch kind {
		case "join":
			if len(names) >= 3*cfg.Collectors {
				continue
			}
			name := "collector-" + strconv.Itoa(nextName)
			nextName++
			names = append(slices.Clone(names), name)
			out = append(out, Change{Kind: kind, Note: name, Collectors: names})
		case "leave":
			if len(names) <= 2 {
				continue
			}
			i := rng.IntN(len(names))
			gone = append(gone, names[i])
			out = append(out, Change{Kind: kind, Note: names[i], Collectors: slices.Delete(slices.Clone(names), i, i+1)})
			names = out[len(out)-1].Collectors
		case "return":
			if len(gone) == 0 || len(names) >= 3*cfg.Collectors {
				continue
			}
			i := rng.IntN(len(gone))
			name := gone[i]
			gone = slices.Delete(gone, i, i+1)
			names = append(slices.Clone(names), name)
			out = append(out, Change{Kind: kind, Note: name, Collectors: names})
		case "churn":
			f := 0.001 + rng.Float64()*0.049
			out = append(out, Change{Kind: kind, Note: fmt.Sprintf("%.1f%%", f*100), Jobs: w.Churn(f)})
		case "grow":
			if T >= 2*cfg.Targets {
				continue
			}
			f := 0.005 + rng.Float64()*0.015
			out = append(out, Change{Kind: kind, Note: fmt.Sprintf("%.1f%%", f*100), Jobs: w.Grow(f)})
		case "shrink":
			if T <= cfg.Targets/2 {
				continue
			}
			f := 0.005 + rng.Float64()*0.015
			out = append(out, Change{Kind: kind, Note: fmt.Sprintf("%.1f%%", f*100), Jobs: w.Shrink(f)})
		case "add-job":
			if T >= 2*cfg.Targets {
				continue
			}
			job := "trace-job-" + strconv.Itoa(jobs)
			jobs++
			n := 1 + rng.IntN(max(1, cfg.Targets/20))
			out = append(out, Change{Kind: kind, Note: job, Jobs: w.AddJob(job, n)})
		case "remove-job":
			all := w.JobNames()
			if T <= cfg.Targets/2 || len(all) <= 2 {
				continue
			}
			job := all[rng.IntN(len(all))]
			change, _ := w.RemoveJob(job)
			out = append(out, Change{Kind: kind, Note: job, Jobs: change})
		}
	}
	return out
}
