// Command clusterload measures the allocator as a whole process with
// Kubernetes service discovery against a real API server: it starts envtest's
// kube-apiserver and etcd (KUBEBUILDER_ASSETS), creates -targets pods with
// their Services, EndpointSlices and -monitors ServiceMonitors and
// -collectors Ready collector pods through the API, runs the allocator
// binary (-allocator, built by make build) with prometheus_cr and
// pod-discovered collectors, and reports the time until every kept target
// is served exactly once, RSS (steady, peak, over time), idle CPU, the API
// requests the allocator made, its heap split into informer caches and the
// rest, and the time a rolling update step of a 1,000-pod Deployment takes
// to reach the collectors. See package benchmarks/internal/cluster.
//
//	make build && go -C benchmarks build -o $PWD/bin/clusterload ./cmd/clusterload
//	KUBEBUILDER_ASSETS=$(./hack/envtest.sh) ./bin/clusterload -targets 50000 -monitors 100 -collectors 10
//
// -allocators K runs K allocators side by side, each selecting its own
// share of the ServiceMonitors and collectors; -poll-interval runs the
// polling load of every collector on every job of the first allocator.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardwise/shardwise/benchmarks/internal/cluster"
	"github.com/shardwise/shardwise/benchmarks/internal/command"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// flags are the command's own flags; the rest are cluster.Options.
type flags struct {
	jsonOut, dir string
	keep         bool
}

// parseFlags parses args; when ok is false the command ends with code.
func parseFlags(args []string, stderr io.Writer) (o cluster.Options, fl flags, code int, ok bool) {
	fs := command.FlagSet("clusterload", stderr)
	o.Log = stderr
	fs.StringVar(&o.Allocator, "allocator", "./bin/allocator", "The allocator binary (make build).")
	fs.StringVar(&o.CRDDir, "crds", "test/crds", "Directory of the monitoring CRDs.")
	fs.IntVar(&o.Targets, "targets", 10_000, "Workload pods: kept targets (each endpoint also has an http port the ServiceMonitor drops).")
	fs.IntVar(&o.Monitors, "monitors", 100, "ServiceMonitors, one per workload (Service).")
	fs.IntVar(&o.Collectors, "collectors", 10, "Collector pods.")
	fs.IntVar(&o.Allocators, "allocators", 1, "Allocators side by side, each with its share of monitors, targets and collectors.")
	fs.IntVar(&o.RolloutPods, "rollout-pods", 1000, "Pods of the Deployment whose rolling update is timed (at most half the first allocator's pods).")
	fs.IntVar(&o.RolloutSteps, "rollout-steps", 4, "Steps of the rolling update (25% each by default); 0 skips it.")
	fs.DurationVar(&o.Idle, "idle", time.Minute, "How long idle CPU is measured.")
	fs.IntVar(&o.Workers, "workers", 64, "Concurrent API requests while creating the cluster.")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "How long to wait for a complete assignment.")
	fs.DurationVar(&o.SampleEvery, "sample", 100*time.Millisecond, "RSS sampling interval.")
	fs.DurationVar(&o.Poll.Interval, "poll-interval", 0, "Run the collectors' polling load with this interval (e.g. 30s); 0 skips it.")
	fs.DurationVar(&o.Poll.Duration, "poll-duration", time.Minute, "How long the polling load runs.")
	fs.BoolVar(&o.NoPods, "no-pods", false, "Create the EndpointSlices without their workload pods: endpoints without pod metadata.")
	fs.DurationVar(&o.StartProfile, "start-profile", 0, "Take a CPU profile of this length (at most 60s) from the moment each allocator listens: <dir>/<allocator>.start-cpu.pb.gz.")
	fs.Func("allocator-env", "KEY=VALUE added to the allocators' environment (GOMEMLIMIT=256MiB, GOGC=50); repeatable.", func(v string) error {
		if !strings.Contains(v, "=") {
			return fmt.Errorf("want KEY=VALUE, got %q", v)
		}
		o.AllocatorEnv = append(o.AllocatorEnv, v)
		return nil
	})
	fs.StringVar(&fl.jsonOut, "json", "", "Also write the JSON summary to this file.")
	fs.StringVar(&fl.dir, "dir", "", "Where to keep configs, logs, the audit log, heap profiles and idle CPU profiles; a temporary directory (removed) when empty.")
	fs.BoolVar(&fl.keep, "keep", false, "Keep the temporary directory.")
	code, ok = command.Parse(fs, args)
	return o, fl, code, ok
}

func run(args []string, stdout, stderr io.Writer) int {
	o, fl, code, ok := parseFlags(args, stderr)
	if !ok {
		return code
	}
	if o.Targets < 1 || o.Monitors < 1 || o.Collectors < 1 || o.Allocators < 1 || o.Workers < 1 || o.Idle <= 0 {
		fmt.Fprintln(stderr, "clusterload: -targets, -monitors, -collectors, -allocators, -workers and -idle must be positive")
		return 2
	}
	dir, cleanup, err := workDir(fl.dir, fl.keep, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "clusterload:", err)
		return 1
	}
	defer cleanup()
	o.Dir = dir
	ctrllog.SetLogger(logr.Discard()) // envtest logs through controller-runtime
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, err := cluster.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "clusterload:", err)
		return 1
	}
	printTable(stdout, sum)
	b, _ := json.MarshalIndent(sum, "", "  ")
	if fl.jsonOut != "" {
		if err := os.WriteFile(fl.jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(stderr, "clusterload:", err)
			return 1
		}
	} else {
		fmt.Fprintf(stdout, "%s\n", b)
	}
	for _, r := range sum.Results {
		if !r.ExactlyOnce || r.ExitCode != 0 {
			return 1
		}
	}
	return 0
}

// workDir returns dir, created if need be, or without one a new temporary
// directory, which cleanup removes unless keep.
func workDir(dir string, keep bool, stderr io.Writer) (_ string, cleanup func(), _ error) {
	if dir != "" {
		return dir, func() {}, os.MkdirAll(dir, 0o755)
	}
	d, err := os.MkdirTemp("", "shardwise-clusterload-")
	if err != nil {
		return "", nil, err
	}
	if keep {
		fmt.Fprintln(stderr, "clusterload: keeping", d)
		return d, func() {}, nil
	}
	return d, func() { _ = os.RemoveAll(d) }, nil
}

func printTable(w io.Writer, s *cluster.Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	f := func(v float64, d int) string { return strconv.FormatFloat(v, 'f', d, 64) }
	row := func(k string, vs ...string) {
		fmt.Fprint(tw, k)
		for _, v := range vs {
			fmt.Fprint(tw, "\t", v)
		}
		fmt.Fprintln(tw, "\t")
	}
	row("created (s) / writes per s", f(s.Populate.Seconds, 1), f(s.Populate.WritesPerSecond, 0))
	row("load average at start / end", f(s.LoadAverage[0], 1), f(s.LoadAverage[1], 1))
	for _, r := range s.Results {
		row("allocator", r.Name)
		row("  jobs / collectors", strconv.Itoa(r.Jobs), strconv.Itoa(r.Collectors))
		row("  targets kept / discovered", strconv.Itoa(r.Targets), strconv.Itoa(r.Discovered))
		row("  listening after (s)", f(r.ListeningSeconds, 2))
		row("  complete after (s) / last round (s)", f(r.CompleteSeconds, 2), f(r.CompleteRoundSeconds, 2))
		row("  RSS steady / peak at complete / peak (MiB)", f(r.RSSSteadyMiB, 1), f(r.RSSPeakStartMiB, 1), f(r.RSSPeakMiB, 1))
		row("  idle CPU (s over s) / cores", f(r.IdleCPUSeconds, 2)+" / "+f(r.IdleSeconds, 0), f(r.IdleCores, 4))
		row("  heap total / informers / prometheus SD / shardwise / other (MiB)", f(r.Heap.TotalMiB, 1), f(r.Heap.InformerMiB, 1), f(r.Heap.PrometheusSDMiB, 1), f(r.Heap.ShardwiseMiB, 1), f(r.Heap.OtherMiB, 1))
		row("  per target over informers: heap / RSS (KiB)", f(r.HeapPerTargetKiB, 2), f(r.RSSPerTargetKiB, 2))
		row("  API requests total / while idle", strconv.Itoa(r.API.Total), strconv.Itoa(r.API.Idle))
		verbs := make([]string, 0, len(r.API.ByVerb))
		for k := range r.API.ByVerb {
			verbs = append(verbs, k)
		}
		sort.Strings(verbs)
		for _, k := range verbs {
			row("    "+k, strconv.Itoa(r.API.ByVerb[k]))
		}
		row("  exactly once / exit code", strconv.FormatBool(r.ExactlyOnce), strconv.Itoa(r.ExitCode))
	}
	if ro := s.Rollout; ro != nil {
		row("rolling update", ro.Job, strconv.Itoa(ro.Pods)+" pods")
		for i, st := range ro.Steps {
			row(fmt.Sprintf("  step %d: replaced / slices / visible after (s)", i+1), strconv.Itoa(st.Replaced), strconv.Itoa(st.SlicesWritten), f(st.VisibleSeconds, 3))
		}
	}
	if p := s.Poll; p != nil {
		row("polling: collectors × jobs every (s)", strconv.Itoa(p.Collectors)+" × "+strconv.Itoa(p.Jobs), f(p.Interval, 0))
		row("  rate (req/s) / duration (s)", f(p.Rate, 0), f(p.Duration, 0))
		row("  targets: requests / errors / p50 / p99 / max (ms)", strconv.FormatUint(p.Targets.Requests, 10), strconv.FormatUint(p.Targets.Errors, 10), f(p.Targets.P50ms, 2), f(p.Targets.P99ms, 2), f(p.Targets.MaxMs, 2))
		row("  scrape_configs: requests / errors / p50 / p99 / max (ms)", strconv.FormatUint(p.ScrapeConfigs.Requests, 10), strconv.FormatUint(p.ScrapeConfigs.Errors, 10), f(p.ScrapeConfigs.P50ms, 2), f(p.ScrapeConfigs.P99ms, 2), f(p.ScrapeConfigs.MaxMs, 2))
		row("  RSS max (MiB) / allocator CPU (s)", f(p.RSSMaxMiB, 1), f(p.CPUSeconds, 1))
	}
	_ = tw.Flush()
}
