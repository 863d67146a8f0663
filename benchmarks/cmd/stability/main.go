// Command stability measures how shardwise's allocation strategies, and the
// baselines they are compared with, balance targets and how many they move
// when collectors join, leave and restart and when targets churn.
//
// Without -scenario or -report it prints one row per collector count for one
// strategy (with -json, one JSON object per line with the fields n, targets,
// balance, balance_after_join, moved_join, min_join, moved_leave, min_leave,
// moved_churn, churn_min, restart_moved, assign_ms, join_ms):
//
//	go -C benchmarks run ./cmd/stability -targets 100000 -collectors 3,10,30,100 -strategy consistent-hashing -json
//
// -scenario NAME|all runs scenarios over every strategy (or those named by
// -strategy) and prints a summary per strategy (with -json, every step).
// -report DIR writes the HTML report, its PNG and SVG plots and report.json.
// See benchmarks/README.md.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/benchmarks/internal/command"
	"github.com/shardwise/shardwise/benchmarks/internal/handoffsim"
	"github.com/shardwise/shardwise/benchmarks/internal/report"
	"github.com/shardwise/shardwise/benchmarks/internal/scenario"
	"github.com/shardwise/shardwise/benchmarks/internal/strategy"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// options are the command's flags.
type options struct {
	targets     int
	collectors  string
	strategies  string
	strategySet bool // -strategy was given
	epsilon     string
	asJSON      bool
	scenario    string
	reportDir   string
	jobs        int
	seed        uint64
	n           int
	traceSteps  int
	sweep       string
	handoff     bool
}

// parseFlags parses args; when ok is false the command ends with code.
func parseFlags(args []string, stderr io.Writer) (o options, code int, ok bool) {
	fs := command.FlagSet("stability", stderr)
	fs.IntVar(&o.targets, "targets", 100000, "number of targets")
	fs.StringVar(&o.collectors, "collectors", "3,10,30,100", "comma-separated collector counts for the table")
	fs.StringVar(&o.strategies, "strategy", "consistent-hashing", "strategy, a comma-separated list, or all: "+strings.Join(strategy.Names(), ", "))
	fs.StringVar(&o.epsilon, "epsilon", "0.05", "load bound ε of consistent-hashing; a comma-separated list runs consistent-hashing once per ε in the same process. The first ε is the reference ε of every minimum")
	fs.BoolVar(&o.asJSON, "json", false, "print JSON: one object per collector count, or per scenario step")
	fs.StringVar(&o.scenario, "scenario", "", "run a scenario over the strategies: one of scale, restart, churn, job, trace, or all")
	fs.StringVar(&o.reportDir, "report", "", "write the HTML report with PNG/SVG plots and report.json into this directory")
	fs.IntVar(&o.jobs, "jobs", 100, "number of jobs the targets are spread over")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the workload and the random trace")
	fs.IntVar(&o.n, "n", 10, "collectors the restart, churn, job and trace scenarios start with")
	fs.IntVar(&o.traceSteps, "trace-steps", 1000, "steps of the random trace")
	fs.StringVar(&o.sweep, "sweep", "0.05,0.1,0.15,0.2", "consistent-hashing ε values for the report's trade-off table")
	fs.BoolVar(&o.handoff, "handoff", false, "simulate collectors polling every 30 s and applying updates up to 10 s later, through a join, a scale-down and a rolling restart of -n collectors over -targets targets, with the make-before-break handoff and without: targets moved, longest time a target went unscraped, overlap")
	if code, ok = command.Parse(fs, args); ok {
		fs.Visit(func(f *flag.Flag) { o.strategySet = o.strategySet || f.Name == "strategy" })
	}
	return o, code, ok
}

func run(args []string, stdout, stderr io.Writer) int {
	o, code, ok := parseFlags(args, stderr)
	if !ok {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "stability:", err)
		return 1
	}
	ns, err := parseInts(o.collectors)
	if err != nil {
		return fail(fmt.Errorf("-collectors: %w", err))
	}
	epsList, err := parseFloats(o.epsilon)
	if err != nil {
		return fail(fmt.Errorf("-epsilon: %w", err))
	}
	if o.targets < 1 || o.jobs < 1 || o.n < 2 || o.traceSteps < 1 {
		return fail(errors.New("-targets, -jobs and -trace-steps must be positive and -n at least 2"))
	}
	factories, err := o.factories(epsList)
	if err != nil {
		return fail(err)
	}
	cfg := scenario.Config{Targets: o.targets, Jobs: o.jobs, Seed: o.seed, Epsilon: epsList[0], Collectors: o.n, TraceSteps: o.traceSteps}
	scenarios, err := o.scenarios()
	if err != nil {
		return fail(err)
	}

	switch {
	case o.handoff:
		return runHandoff(o.targets, o.n, o.seed, o.asJSON, stdout, fail)
	case o.reportDir != "":
		return runReport(o.sweep, o.reportDir, report.Options{Config: cfg, Strategies: factories, CollectorCounts: ns, Scenarios: scenarios, Progress: stderr,
			Command: "stability " + strings.Join(args, " ")}, stdout, fail)
	case len(scenarios) > 0:
		return runScenarios(scenarios, factories, cfg, o.asJSON, stdout, fail)
	default:
		if o.asJSON && len(factories) > 1 {
			return fail(errors.New("-json prints rows for one strategy; name one with -strategy and at most one -epsilon"))
		}
		return runTable(factories, cfg, ns, o.asJSON, stdout, fail)
	}
}

// factories are the strategies to run: those -strategy names (every one for
// all, or by default with -scenario or -report), consistent-hashing once per
// ε of epsList, the others with the first ε.
func (o options) factories(epsList []float64) ([]strategy.Factory, error) {
	names := strings.Split(o.strategies, ",")
	if o.strategies == "all" || (!o.strategySet && (o.scenario != "" || o.reportDir != "")) {
		names = strategy.Names()
	}
	var factories []strategy.Factory
	for _, name := range names {
		name = strings.TrimSpace(name)
		eps := epsList[:1]
		if name == allocation.ConsistentHashing {
			eps = epsList
		}
		for _, e := range eps {
			f := strategy.Factory{Name: name, Epsilon: e}
			if _, err := f.New(); err != nil {
				return nil, err
			}
			factories = append(factories, f)
		}
	}
	return factories, nil
}

// scenarios are the scenarios -scenario names: every one for all, and by
// default with -report; none otherwise.
func (o options) scenarios() ([]scenario.Scenario, error) {
	switch o.scenario {
	case "", "all":
		if o.scenario == "all" || o.reportDir != "" {
			return scenario.All(), nil
		}
		return nil, nil
	default:
		sc, err := scenario.Lookup(o.scenario)
		if err != nil {
			return nil, err
		}
		return []scenario.Scenario{sc}, nil
	}
}

// runReport builds the report of opts with the ε values of sweep (-sweep)
// and writes it into dir.
func runReport(sweep, dir string, opts report.Options, stdout io.Writer, fail func(error) int) int {
	eps, err := parseFloats(sweep)
	if err != nil {
		return fail(fmt.Errorf("-sweep: %w", err))
	}
	opts.Sweep = eps
	rep, err := report.Build(opts)
	if err != nil {
		return fail(err)
	}
	if err := rep.Write(dir); err != nil {
		return fail(err)
	}
	fmt.Fprintf(stdout, "report: %s\n", rep.Index(dir))
	return 0
}

func runTable(factories []strategy.Factory, cfg scenario.Config, ns []int, asJSON bool, stdout io.Writer, fail func(error) int) int {
	enc := json.NewEncoder(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	if !asJSON {
		fmt.Fprintln(tw, "strategy\tn\ttargets\tbalance\tbal_join\tmoved_join\tmin_join\tjoin/min\tmoved_leave\tmin_leave\tleave/min\tmoved_churn\tchurn_min\trestart_moved\trestart_grace\tassign_ms\tjoin_ms\t")
	}
	for _, f := range factories {
		for _, n := range ns {
			m, err := scenario.Measure(f, cfg, n)
			if err != nil {
				return fail(err)
			}
			if asJSON {
				if err := enc.Encode(m.Row); err != nil {
					return fail(err)
				}
				continue
			}
			r := m.Row
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.4f\t%.4f\t%d\t%d\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t\n",
				m.Strategy, r.N, r.Targets, r.Balance, r.BalanceAfterJoin, r.MovedJoin, r.MinJoin, ratio(r.MovedJoin, r.MinJoin),
				r.MovedLeave, r.MinLeave, ratio(r.MovedLeave, r.MinLeave), r.MovedChurn, r.ChurnMin, r.RestartMoved, r.RestartMovedGrace, r.AssignMS, r.JoinMS)
		}
	}
	if err := tw.Flush(); err != nil {
		return fail(err)
	}
	return 0
}

func runScenarios(scenarios []scenario.Scenario, factories []strategy.Factory, cfg scenario.Config, asJSON bool, stdout io.Writer, fail func(error) int) int {
	enc := json.NewEncoder(stdout)
	for _, sc := range scenarios {
		changes := sc.Build(cfg)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		if !asJSON {
			fmt.Fprintf(stdout, "scenario %s: %s\n", sc.Name, sc.Description)
			fmt.Fprintln(tw, "strategy\tsteps\tmoved\tmin\tmoved/min\tworst step\tmean balance\tmax balance\tdrift\ttotal ms\tmedian ms\tmax ms\t")
		}
		for _, f := range factories {
			res, err := scenario.RunChanges(sc.Name, changes, f, cfg)
			if err != nil {
				return fail(err)
			}
			if asJSON {
				for _, st := range res.Steps {
					if err := enc.Encode(struct {
						Scenario string `json:"scenario"`
						Strategy string `json:"strategy"`
						scenario.Step
					}{sc.Name, res.Strategy, st}); err != nil {
						return fail(err)
					}
				}
				continue
			}
			s := scenario.Summarize(res)
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%.2f\t%.4f\t%.4f\t%d\t%.1f\t%.2f\t%.2f\t\n",
				s.Strategy, s.Steps, s.Moved, s.Min, ratio(s.Moved, s.Min), s.WorstRatio, s.MeanBalance, s.MaxBalance, s.Drift, s.TotalMS, s.MedianMS, s.MaxMS)
		}
		if err := tw.Flush(); err != nil {
			return fail(err)
		}
		if !asJSON {
			fmt.Fprintln(stdout)
		}
	}
	return 0
}

func ratio(a, b int) string {
	if b == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(a)/float64(b), 'f', 3, 64)
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// runHandoff prints, per scenario, what a change of the collector set
// costs in scrapes with the handoff (a collector running 60 s after it is
// told to stop: a preStop sleep) and without it (a collector exiting within
// 2 s, kept for the 30 s not-ready grace period).
func runHandoff(targets, n int, seed uint64, asJSON bool, stdout io.Writer, fail func(error) int) int {
	var rows []handoffsim.Figures
	for _, sc := range []string{"join", "scale-down", "rolling-restart"} {
		for _, on := range []bool{false, true} {
			terminating := 2 * time.Second
			if on {
				terminating = 60 * time.Second
			}
			f, err := handoffsim.Run(sc, handoffsim.Config{
				Targets: targets, Collectors: n, Poll: 30 * time.Second, Latency: 10 * time.Second,
				Handoff: on, Settle: allocatorconfig.DefaultHandoffSettle, Terminating: terminating, Grace: 30 * time.Second, Seed: seed,
			})
			if err != nil {
				return fail(err)
			}
			rows = append(rows, f)
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return fail(err)
			}
		}
		return 0
	}
	fmt.Fprintf(stdout, "%16s %8s %8s %14s %18s\n", "scenario", "handoff", "moved", "longest_gap_s", "overlap_target_s")
	for _, r := range rows {
		fmt.Fprintf(stdout, "%16s %8v %8d %14.1f %18.1f\n", r.Scenario, r.Handoff, r.Moved, r.LongestGapS, r.OverlapS)
	}
	return 0
}
