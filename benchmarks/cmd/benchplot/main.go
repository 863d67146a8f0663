// Command benchplot draws the throughput figures of a `go test -bench` run of
// the pipeline benchmark (what `make bench` writes to
// benchmarks/results/make-bench.txt): for BenchmarkPipeline/full/targets=N,
// the time of each stage per pass and the cost per discovered target, over N.
//
//	go -C benchmarks run ./cmd/benchplot -in results/make-bench.txt -out results
//
// It writes pipeline-ms.{png,svg} and pipeline-per-target.{png,svg}. Lines of
// other benchmarks are skipped; a run with no pipeline lines is an error.
//
// With -cluster DIR it plots the clusterload -json summaries in DIR instead:
// cluster-rss.{png,svg} (RSS over time) and cluster-complete.{png,svg}
// (time to a complete assignment and peak RSS over the size).
//
//	go -C benchmarks run ./cmd/benchplot -cluster results/cluster -out results
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/shardwise/shardwise/benchmarks/internal/command"
	"github.com/shardwise/shardwise/benchmarks/internal/report"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := command.FlagSet("benchplot", stderr)
	in := fs.String("in", "results/make-bench.txt", "go test -bench output to read")
	out := fs.String("out", "results", "directory to write the figures into")
	clusterDir := fs.String("cluster", "", "plot the clusterload JSON summaries in this directory (cluster-rss, cluster-complete) instead")
	if code, ok := command.Parse(fs, args); !ok {
		return code
	}
	var figs []report.Figure
	if *clusterDir != "" {
		runs, err := readCluster(*clusterDir)
		if err != nil {
			fmt.Fprintf(stderr, "benchplot: %s: %v\n", *clusterDir, err)
			return 1
		}
		figs = clusterFigures(runs)
	} else {
		passes, err := readPasses(*in)
		if err != nil {
			fmt.Fprintln(stderr, "benchplot:", err)
			return 1
		}
		figs = figures(passes)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(stderr, "benchplot:", err)
		return 1
	}
	for _, fig := range figs {
		for _, ext := range []string{".png", ".svg"} {
			file := filepath.Join(*out, fig.ID+ext)
			if err := report.Render(fig, file); err != nil {
				fmt.Fprintln(stderr, "benchplot:", err)
				return 1
			}
			fmt.Fprintln(stdout, "wrote", file)
		}
	}
	return 0
}

// readPasses parses the go test -bench output in file.
func readPasses(file string) ([]pass, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	passes, err := parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return passes, nil
}

// pass is one BenchmarkPipeline/full/targets=N line: its metrics by unit.
type pass struct {
	targets int
	metrics map[string]float64
}

// parse reads benchmark lines and keeps the pipeline's full passes, those
// with per-stage metrics (discovery's filter-only benchmark of the same name
// has none), in order of size.
func parse(r io.Reader) ([]pass, error) {
	var out []pass
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "BenchmarkPipeline/full/targets=") {
			continue
		}
		name := strings.TrimPrefix(fields[0], "BenchmarkPipeline/full/targets=")
		if i := strings.LastIndexByte(name, '-'); i > 0 { // the GOMAXPROCS suffix
			name = name[:i]
		}
		n, err := strconv.Atoi(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fields[0], err)
		}
		p := pass{targets: n, metrics: map[string]float64{}}
		// fields[1] is the iteration count; then value-unit pairs.
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: value %q: %w", fields[0], fields[i], err)
			}
			p.metrics[fields[i+1]] = v
		}
		if _, ok := p.metrics["filter-ms/op"]; !ok {
			continue
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no BenchmarkPipeline/full lines with stage metrics")
	}
	slices.SortStableFunc(out, func(a, b pass) int { return a.targets - b.targets })
	return out, nil
}

func figures(passes []pass) []report.Figure {
	series := func(name string, val func(p pass) float64) report.Series {
		s := report.Series{Name: name}
		for _, p := range passes {
			s.Points = append(s.Points, [2]float64{float64(p.targets), val(p)})
		}
		return s
	}
	metric := func(unit string) func(p pass) float64 { return func(p pass) float64 { return p.metrics[unit] } }
	sum := func(units ...string) func(p pass) float64 {
		return func(p pass) float64 {
			t := 0.0
			for _, u := range units {
				t += p.metrics[u]
			}
			return t
		}
	}
	perTarget := func(units ...string) func(p pass) float64 {
		s := sum(units...)
		return func(p pass) float64 { return s(p) / float64(p.targets) }
	}
	return []report.Figure{
		{
			ID:    "pipeline-ms",
			Title: "Pipeline pass from nothing: time per stage",
			X:     "discovered targets", Y: "ms per pass", LogX: true, LogY: true, Floor: 0.01,
			Series: []report.Series{
				series("filter + alloc (groups → allocated)", sum("filter-ms/op", "alloc-ms/op")),
				series("filter (relabel, identity)", metric("filter-ms/op")),
				series("alloc (consistent-hashing)", metric("alloc-ms/op")),
				series("serve (every response once)", metric("serve-ms/op")),
				{Name: "issue 4 target: 250 ms at 100k", Points: [][2]float64{{100_000, 250}}},
			},
		},
		{
			ID:    "pipeline-per-target",
			Title: "Pipeline pass from nothing: cost per discovered target",
			X:     "discovered targets", Y: "µs or kB per target", LogX: true, LogY: true, Floor: 0.001,
			Series: []report.Series{
				series("filter + alloc µs", func(p pass) float64 { return perTarget("filter-ms/op", "alloc-ms/op")(p) * 1e3 }),
				series("serve µs", func(p pass) float64 { return perTarget("serve-ms/op")(p) * 1e3 }),
				series("filter + alloc kB allocated", func(p pass) float64 { return perTarget("filter-MB/op", "alloc-MB/op")(p) * 1e3 }),
				series("serve kB allocated", func(p pass) float64 { return perTarget("serve-MB/op")(p) * 1e3 }),
			},
		},
	}
}
