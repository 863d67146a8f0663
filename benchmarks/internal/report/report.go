// Package report runs the stability table, the ε sweep and the scenarios over
// every strategy and writes them as a self-contained HTML page with PNG and
// SVG plots (gonum.org/v1/plot) and report.json, which holds every figure's
// data and every measured step.
package report

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/benchmarks/internal/scenario"
	"github.com/shardwise/shardwise/benchmarks/internal/strategy"
)

// Options choose what the report measures.
type Options struct {
	Config scenario.Config
	// Strategies are compared in every table and figure.
	Strategies []strategy.Factory
	// CollectorCounts are the N of the stability table.
	CollectorCounts []int
	// Scenarios are run over every strategy.
	Scenarios []scenario.Scenario
	// Sweep lists ε values of shardwise's consistent-hashing for the
	// balance/movement trade-off table.
	Sweep []float64
	// Progress, when not nil, receives a line per measurement.
	Progress io.Writer
	// Command is the command line that produced the report, shown on it.
	Command string
}

// Report is everything measured, as written to report.json.
type Report struct {
	Generated string          `json:"generated"`
	Command   string          `json:"command,omitempty"`
	Machine   Machine         `json:"machine"`
	Config    scenario.Config `json:"config"`
	// Table holds one measurement per strategy and collector count.
	Table []scenario.Measurement `json:"table"`
	// Sweep holds consistent-hashing measurements, one per ε and count.
	Sweep []SweepRow `json:"sweep"`
	// Scenarios hold every step of every scenario for every strategy.
	Scenarios []ScenarioRun `json:"scenarios"`
	Figures   []Figure      `json:"figures"`
}

// SweepRow is a consistent-hashing measurement at one ε.
type SweepRow struct {
	Epsilon float64 `json:"epsilon"`
	scenario.Row
}

// ScenarioRun is one scenario over all strategies.
type ScenarioRun struct {
	Name        string             `json:"name"`
	Description string             `json:"description"`
	Results     []scenario.Result  `json:"results"`
	Summaries   []scenario.Summary `json:"summaries"`
}

// Machine describes where the report ran.
type Machine struct {
	Go     string `json:"go"`
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	CPUs   int    `json:"cpus"`
	CPU    string `json:"cpu,omitempty"`
	Memory string `json:"memory,omitempty"`
}

func machine() Machine {
	m := Machine{Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	m.CPU = procField("/proc/cpuinfo", "model name")
	m.Memory = procField("/proc/meminfo", "MemTotal")
	return m
}

func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Build runs every measurement and lays out the figures.
func Build(o Options) (*Report, error) {
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	r := &Report{Generated: time.Now().UTC().Format(time.RFC3339), Command: o.Command, Machine: machine(), Config: o.Config}
	for _, f := range o.Strategies {
		for _, n := range o.CollectorCounts {
			progress("table: %s n=%d targets=%d", f.Label(), n, o.Config.Targets)
			m, err := scenario.Measure(f, o.Config, n)
			if err != nil {
				return nil, fmt.Errorf("measure %s n=%d: %w", f.Label(), n, err)
			}
			r.Table = append(r.Table, m)
		}
	}
	for _, eps := range o.Sweep {
		f := strategy.Factory{Name: allocation.ConsistentHashing, Epsilon: eps}
		for _, n := range o.CollectorCounts {
			progress("sweep: %s n=%d", f.Label(), n)
			cfg := o.Config
			cfg.SkipRestart = true
			m, err := scenario.Measure(f, cfg, n)
			if err != nil {
				return nil, fmt.Errorf("sweep ε=%g n=%d: %w", eps, n, err)
			}
			r.Sweep = append(r.Sweep, SweepRow{Epsilon: eps, Row: m.Row})
		}
	}
	for _, sc := range o.Scenarios {
		changes := sc.Build(o.Config)
		run := ScenarioRun{Name: sc.Name, Description: sc.Description}
		for _, f := range o.Strategies {
			progress("scenario %s: %s (%d steps)", sc.Name, f.Label(), len(changes))
			res, err := scenario.RunChanges(sc.Name, changes, f, o.Config)
			if err != nil {
				return nil, fmt.Errorf("scenario %s %s: %w", sc.Name, f.Label(), err)
			}
			run.Results = append(run.Results, res)
			run.Summaries = append(run.Summaries, scenario.Summarize(res))
		}
		r.Scenarios = append(r.Scenarios, run)
	}
	loads, err := joinLoads(o)
	if err != nil {
		return nil, err
	}
	r.Figures = figures(r, loads, o.Config.Collectors)
	return r, nil
}

// joinLoads measures every strategy at the scenarios' collector count, for
// the per-collector load figures.
func joinLoads(o Options) ([]scenario.Measurement, error) {
	var out []scenario.Measurement
	cfg := o.Config
	cfg.SkipRestart = true
	for _, f := range o.Strategies {
		m, err := scenario.Measure(f, cfg, o.Config.Collectors)
		if err != nil {
			return nil, fmt.Errorf("join loads %s: %w", f.Label(), err)
		}
		out = append(out, m)
	}
	return out, nil
}

// Index returns the path of the HTML page inside dir.
func (r *Report) Index(dir string) string { return filepath.Join(dir, "index.html") }

// Write writes index.html, report.json and a PNG and an SVG per figure into
// dir, creating it.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create report directory: %w", err)
	}
	for _, f := range r.Figures {
		for _, ext := range []string{"png", "svg"} {
			if err := render(f, filepath.Join(dir, f.ID+"."+ext)); err != nil {
				return fmt.Errorf("render %s.%s: %w", f.ID, ext, err)
			}
		}
	}
	if err := writeJSON(filepath.Join(dir, "report.json"), r); err != nil {
		return err
	}
	return writeHTML(filepath.Join(dir, "index.html"), r)
}
