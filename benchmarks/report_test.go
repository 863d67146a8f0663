package benchmarks

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/benchmarks/internal/report"
	"github.com/shardwise/shardwise/benchmarks/internal/scenario"
	"github.com/shardwise/shardwise/benchmarks/internal/strategy"
)

// pure lists the strategies whose assignment is a pure function of the
// targets and collectors: a rolling restart, or a change undone, must leave
// no trace.
var pure = map[string]bool{
	strategy.Ring:           true,
	strategy.Rendezvous:     true,
	strategy.HashMod:        true,
	strategy.OTelConsistent: true,
}

func isConsistent(name string) bool { return strings.HasPrefix(name, allocation.ConsistentHashing) }

// TestReport builds the report on a small size and checks that every figure
// is finite and internally consistent and that the files are written.
func TestReport(t *testing.T) {
	t.Parallel()
	const eps = 0.05
	cfg := scenario.Config{Targets: 2000, Jobs: 20, Seed: 7, Epsilon: eps, Collectors: 6, TraceSteps: 120}
	var fs []strategy.Factory
	for _, name := range strategy.Names() {
		fs = append(fs, strategy.Factory{Name: name, Epsilon: eps})
	}
	rep, err := report.Build(report.Options{
		Config: cfg, Strategies: fs, CollectorCounts: []int{3, 10}, Scenarios: scenario.All(), Sweep: []float64{0.05, 0.2},
	})
	require.NoError(t, err)

	t.Run("table", func(t *testing.T) { checkTable(t, rep, cfg.Targets, eps, len(fs)) })
	t.Run("scenarios", func(t *testing.T) { checkScenarios(t, rep, len(fs)) })
	t.Run("figures", func(t *testing.T) { checkFigures(t, rep) })
	t.Run("files", func(t *testing.T) { checkFiles(t, rep) })
}

// checkTable checks the stability table of TestReport: every strategy at
// both collector counts, over targets targets with load bound eps.
func checkTable(t *testing.T, rep *report.Report, targets int, eps float64, strategies int) {
	require.Len(t, rep.Table, strategies*2)
	for _, m := range rep.Table {
		require.Equal(t, targets, m.Targets, m.Strategy)
		require.GreaterOrEqual(t, m.Balance, 1.0, m.Strategy)
		require.GreaterOrEqual(t, m.BalanceAfterJoin, 1.0, m.Strategy)
		// Leaving: what the leaver held must move, for every strategy.
		require.GreaterOrEqual(t, m.MovedLeave, m.MinLeave, "%s n=%d", m.Strategy, m.N)
		require.Equal(t, targets/(m.N+1), m.MinJoin, "%s n=%d", m.Strategy, m.N)
		require.GreaterOrEqual(t, m.AssignMS, 0.0)
		require.GreaterOrEqual(t, m.JoinMS, 0.0)
		// A rolling restart counts every intermediate move: without a
		// grace period each pod leaves and returns; within it nothing
		// moves, whatever the strategy.
		require.Positive(t, m.RestartMoved, "%s n=%d", m.Strategy, m.N)
		require.Zero(t, m.RestartMovedGrace, "%s n=%d: a rolling restart within the grace period moved targets", m.Strategy, m.N)
		if isConsistent(m.Strategy) {
			limit := float64(scenario.Capacity(m.Targets, m.N, eps)) * float64(m.N) / float64(m.Targets)
			require.LessOrEqual(t, m.Balance, limit+1e-9, "n=%d: above the load bound", m.N)
			// The joiner's leave undoes the join exactly.
			require.Equal(t, m.MovedJoin, m.MovedLeave, "n=%d", m.N)
		}
	}
}

// checkScenarios checks every step of every scenario of TestReport for every
// strategy.
func checkScenarios(t *testing.T, rep *report.Report, strategies int) {
	require.Len(t, rep.Scenarios, len(scenario.All()))
	for _, sc := range rep.Scenarios {
		require.Len(t, sc.Results, strategies)
		for _, res := range sc.Results {
			require.NotEmpty(t, res.Steps)
			require.Zero(t, res.Steps[0].Min, "%s %s: the first assignment has no minimum", sc.Name, res.Strategy)
			for _, st := range res.Steps {
				where := []any{"%s %s step %d (%s %s)", sc.Name, res.Strategy, st.Index, st.Kind, st.Note}
				require.Zero(t, st.Unassigned, where...)
				require.GreaterOrEqual(t, st.Balance, 1.0, where...)
				require.False(t, math.IsInf(st.Balance, 0) || math.IsNaN(st.Balance), where...)
				require.LessOrEqual(t, st.Moved, st.Kept, where...)
				require.LessOrEqual(t, st.Min, st.Kept, where...)
				require.GreaterOrEqual(t, st.Moved, st.MinLeft, where...)
				require.GreaterOrEqual(t, st.MS, 0.0, where...)
				if isConsistent(res.Strategy) && st.Index > 0 {
					// The allocator's own accounting agrees with the suite's.
					require.NotNil(t, st.AllocMoved, where...)
					require.Equal(t, st.Moved, *st.AllocMoved, where...)
					require.Equal(t, st.Min, *st.AllocMin, where...)
				}
			}
			undone := sc.Name == "scale" || sc.Name == "restart" || sc.Name == "job"
			if undone && (isConsistent(res.Strategy) || pure[res.Strategy]) {
				require.Zero(t, res.Drift, "%s %s: the scenario left a trace", sc.Name, res.Strategy)
			}
		}
		for _, s := range sc.Summaries {
			require.GreaterOrEqual(t, s.Moved, 0)
			require.False(t, math.IsNaN(s.Ratio) || math.IsInf(s.Ratio, 0))
		}
	}
}

// checkFigures checks that every figure of TestReport is unique and has
// points, all finite.
func checkFigures(t *testing.T, rep *report.Report) {
	require.NotEmpty(t, rep.Figures)
	ids := map[string]bool{}
	for _, f := range rep.Figures {
		require.False(t, ids[f.ID], "duplicate figure %s", f.ID)
		ids[f.ID] = true
		points := 0
		for _, s := range f.Series {
			for _, p := range s.Points {
				for _, v := range p {
					require.False(t, math.IsNaN(v) || math.IsInf(v, 0), "%s %s: %v", f.ID, s.Name, p)
				}
				if f.LogY {
					require.GreaterOrEqual(t, p[1], 0.0, "%s %s", f.ID, s.Name)
				}
				points++
			}
		}
		require.Positive(t, points, "figure %s has no points", f.ID)
	}
}

// checkFiles checks the files TestReport's report writes: the page, every
// figure as PNG and SVG, and report.json.
func checkFiles(t *testing.T, rep *report.Report) {
	dir := t.TempDir()
	require.NoError(t, rep.Write(dir))
	html, err := os.ReadFile(rep.Index(dir))
	require.NoError(t, err)
	require.Contains(t, string(html), "<style>")
	for _, f := range rep.Figures {
		png, err := os.ReadFile(filepath.Join(dir, f.ID+".png"))
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), f.ID)
		svg, err := os.ReadFile(filepath.Join(dir, f.ID+".svg"))
		require.NoError(t, err)
		require.Contains(t, string(svg), "<svg", f.ID)
		require.Contains(t, string(html), `src="`+f.ID+`.svg"`)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	var back report.Report
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Len(t, back.Figures, len(rep.Figures))
	require.Len(t, back.Table, len(rep.Table))
}
