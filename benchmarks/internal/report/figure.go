package report

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/shardwise/shardwise/benchmarks/internal/scenario"
)

// Figure is one plot: a line per series. Points hold the measured values;
// on a log axis, values ≤ 0 are drawn at Floor.
type Figure struct {
	ID      string   `json:"id"`
	Section string   `json:"section"`
	Title   string   `json:"title"`
	Caption string   `json:"caption"`
	X       string   `json:"x"`
	Y       string   `json:"y"`
	LogX    bool     `json:"log_x,omitempty"`
	LogY    bool     `json:"log_y,omitempty"`
	Floor   float64  `json:"floor,omitempty"`
	Series  []Series `json:"series"`
}

// Series is one line.
type Series struct {
	Name   string       `json:"name"`
	Points [][2]float64 `json:"points"`
}

// Sections of the report, in page order.
const (
	sectionTable = "table"
	sectionSweep = "sweep"
	sectionLoads = "loads"
)

func ratioOrNaN(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

func figures(r *Report, loads []scenario.Measurement, baseN int) []Figure {
	var out []Figure

	// The stability table, one line per strategy over N.
	byStrategy := map[string][]scenario.Measurement{}
	var order []string
	for _, m := range r.Table {
		if _, ok := byStrategy[m.Strategy]; !ok {
			order = append(order, m.Strategy)
		}
		byStrategy[m.Strategy] = append(byStrategy[m.Strategy], m)
	}
	tableFig := func(id, title, caption, y string, logY bool, floor float64, val func(scenario.Measurement) float64) Figure {
		f := Figure{ID: id, Section: sectionTable, Title: title, Caption: caption, X: "collectors N", Y: y, LogX: true, LogY: logY, Floor: floor}
		for _, s := range order {
			sr := Series{Name: s}
			for _, m := range byStrategy[s] {
				if v := val(m); !math.IsNaN(v) {
					sr.Points = append(sr.Points, [2]float64{float64(m.N), v})
				}
			}
			f.Series = append(f.Series, sr)
		}
		return f
	}
	out = append(out,
		tableFig("table-join-ratio", "Join N→N+1: targets moved / minimum", "The minimum is ⌊T/(N+1)⌋. 1 is optimal; below 1 the joiner got less than its share (0 is drawn at 0.01).", "moved / minimum", true, 0.01,
			func(m scenario.Measurement) float64 { return ratioOrNaN(m.MovedJoin, m.MinJoin) }),
		tableFig("table-leave-ratio", "Leave N+1→N (the joiner leaves): targets moved / minimum", "The minimum is what the leaver held. 1 is optimal.", "moved / minimum", true, 0.01,
			func(m scenario.Measurement) float64 { return ratioOrNaN(m.MovedLeave, m.MinLeave) }),
		tableFig("table-balance", "Balance after the first assignment", "Busiest collector's load over the mean load; 1 is perfect.", "max / mean", false, 0,
			func(m scenario.Measurement) float64 { return m.Balance }),
		tableFig("table-balance-join", "Balance after a join", "Busiest collector's load over the mean load after N→N+1.", "max / mean", false, 0,
			func(m scenario.Measurement) float64 { return m.BalanceAfterJoin }),
		tableFig("table-restart", "Rolling restart: targets on another collector afterwards", "Every collector leaves and returns with the same name; 0 means the restart left no trace (0 is drawn at 0.5).", "targets", true, 0.5,
			func(m scenario.Measurement) float64 { return float64(m.RestartMoved) }),
		tableFig("table-assign-ms", "First assignment time", "Wall time of the first SetCollectors and SetJobTargets, one run.", "ms", true, 0.001,
			func(m scenario.Measurement) float64 { return m.AssignMS }),
		tableFig("table-join-ms", "Join update time", "Wall time of the SetCollectors call that adds one collector, one run.", "ms", true, 0.001,
			func(m scenario.Measurement) float64 { return m.JoinMS }),
	)

	// The ε sweep: one line per N over ε.
	if len(r.Sweep) > 0 {
		ns := []int{}
		seen := map[int]bool{}
		for _, s := range r.Sweep {
			if !seen[s.N] {
				seen[s.N] = true
				ns = append(ns, s.N)
			}
		}
		sweepFig := func(id, title, caption, y string, val func(SweepRow) float64) Figure {
			f := Figure{ID: id, Section: sectionSweep, Title: title, Caption: caption, X: "ε", Y: y}
			for _, n := range ns {
				sr := Series{Name: fmt.Sprintf("N=%d", n)}
				for _, s := range r.Sweep {
					if s.N == n {
						if v := val(s); !math.IsNaN(v) {
							sr.Points = append(sr.Points, [2]float64{s.Epsilon, v})
						}
					}
				}
				f.Series = append(f.Series, sr)
			}
			return f
		}
		out = append(out,
			sweepFig("sweep-join-ratio", "consistent-hashing: join movement over ε", "Targets moved / ⌊T/(N+1)⌋ when one collector joins.", "moved / minimum",
				func(s SweepRow) float64 { return ratioOrNaN(s.MovedJoin, s.MinJoin) }),
			sweepFig("sweep-leave-ratio", "consistent-hashing: leave movement over ε", "Targets moved / what the leaver held.", "moved / minimum",
				func(s SweepRow) float64 { return ratioOrNaN(s.MovedLeave, s.MinLeave) }),
			sweepFig("sweep-balance", "consistent-hashing: balance over ε", "Busiest collector over the mean, after the first assignment.", "max / mean",
				func(s SweepRow) float64 { return s.Balance }),
		)
	}

	// Per-collector load before and after a join at the scenarios' N.
	if len(loads) > 0 {
		loadFig := func(id, title string, after bool) Figure {
			f := Figure{ID: id, Section: sectionLoads, Title: title,
				Caption: fmt.Sprintf("Collector 0 is the one that joins (N=%d→%d); the others in ordinal order. Load over the mean after the join, T/(N+1).", baseN, baseN+1),
				X:       "collector (0 = the joiner)", Y: "load / mean after join"}
			for _, m := range loads {
				mean := float64(m.Targets) / float64(len(m.Collectors))
				ls := m.LoadsBefore
				if after {
					ls = m.LoadsAfter
				}
				sr := Series{Name: m.Strategy}
				for i, l := range ls {
					sr.Points = append(sr.Points, [2]float64{float64(i), float64(l) / mean})
				}
				f.Series = append(f.Series, sr)
			}
			return f
		}
		out = append(out,
			loadFig("loads-before-join", fmt.Sprintf("Load per collector before the join (N=%d)", baseN), false),
			loadFig("loads-after-join", fmt.Sprintf("Load per collector after the join (N=%d)", baseN+1), true))
	}

	// Scenarios, one line per strategy over the steps.
	for _, sc := range r.Scenarios {
		stepFig := func(kind, title, caption, y string, logY bool, floor float64, val func(scenario.Step) float64) Figure {
			f := Figure{ID: sc.Name + "-" + kind, Section: sc.Name, Title: sc.Name + ": " + title, Caption: caption, X: "step", Y: y, LogY: logY, Floor: floor}
			for _, res := range sc.Results {
				sr := Series{Name: res.Strategy}
				for _, st := range res.Steps[1:] {
					if v := val(st); !math.IsNaN(v) {
						sr.Points = append(sr.Points, [2]float64{float64(st.Index), v})
					}
				}
				f.Series = append(f.Series, sr)
			}
			return f
		}
		out = append(out,
			stepFig("ratio", "targets moved / minimum per step", "Steps whose minimum is 0 are left out (see the next figure); 0 is drawn at 0.01.", "moved / minimum", true, 0.01,
				func(st scenario.Step) float64 { return ratioOrNaN(st.Moved, st.Min) }),
			stepFig("moved", "targets moved per step, % of the targets kept", "Only targets present before and after the step count; 0 is drawn at 0.001%.", "moved % of kept", true, 0.001,
				func(st scenario.Step) float64 { return 100 * ratioOrNaN(st.Moved, st.Kept) }),
			stepFig("balance", "balance per step", "Busiest collector's load over the mean after each step.", "max / mean", false, 0,
				func(st scenario.Step) float64 { return st.Balance }),
			stepFig("ms", "update time per step", "Wall time of the SetCollectors or SetJobTargets call.", "ms", true, 0.001,
				func(st scenario.Step) float64 { return st.MS }),
		)
	}
	// Drop figures with nothing to draw (the ratio of a scenario whose
	// minima are all 0).
	kept := out[:0]
	for _, f := range out {
		for _, s := range f.Series {
			if len(s.Points) > 0 {
				kept = append(kept, f)
				break
			}
		}
	}
	return kept
}

// palette holds distinguishable colors (Okabe–Ito, then greys).
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{0, 158, 115, 255},   // green
	color.RGBA{204, 121, 167, 255}, // purple
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky
	color.RGBA{0, 0, 0, 255},       // black
	color.RGBA{240, 228, 66, 255},  // yellow
	color.RGBA{120, 120, 120, 255}, // grey
}

var dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(2)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)}}

// Figure size: the plot on the left, the legend in a column on the right.
const (
	figWidth    = 10 * vg.Inch
	figHeight   = 4.5 * vg.Inch
	legendWidth = 2.7 * vg.Inch
)

// render draws the figure to file; the extension (png or svg) picks the
// format.
func render(f Figure, file string) error {
	p := plot.New()
	p.Title.Text = f.Title
	p.X.Label.Text = f.X
	p.Y.Label.Text = f.Y
	p.Add(plotter.NewGrid())
	if f.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = xTicks(f)
	}
	if f.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	drawn := 0
	for i, s := range f.Series {
		if len(s.Points) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(s.Points))
		for k, pt := range s.Points {
			x, y := pt[0], pt[1]
			if f.LogY && y <= 0 {
				y = f.Floor
			}
			xys[k] = plotter.XY{X: x, Y: y}
		}
		c := palette[i%len(palette)]
		line, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("series %s: %w", s.Name, err)
		}
		line.Color = c
		line.Width = vg.Points(1.3)
		line.Dashes = dashes[i%len(dashes)]
		p.Add(line)
		thumbs := []plot.Thumbnailer{line}
		if len(xys) <= 40 {
			pts, err := plotter.NewScatter(xys)
			if err != nil {
				return fmt.Errorf("series %s: %w", s.Name, err)
			}
			pts.Color = c
			pts.Shape = shapes[i%len(shapes)]
			pts.Radius = vg.Points(2.2)
			p.Add(pts)
			thumbs = append(thumbs, pts)
		}
		legend.Add(s.Name, thumbs...)
		drawn++
	}
	if drawn == 0 {
		return fmt.Errorf("figure %s: nothing to draw", f.ID)
	}
	if !f.LogY && p.Y.Min > 0 && p.Y.Min/p.Y.Max < 0.5 {
		p.Y.Min = 0
	}
	// A log axis needs a positive, non-empty range: gonum widens an empty
	// one by ±0.5, which can cross zero.
	if f.LogY && p.Y.Max <= p.Y.Min*1.01 {
		p.Y.Min, p.Y.Max = p.Y.Min/10, p.Y.Max*10
	}
	if f.LogX && p.X.Max <= p.X.Min*1.01 {
		p.X.Min, p.X.Max = p.X.Min/2, p.X.Max*2
	}

	format := strings.TrimPrefix(filepath.Ext(file), ".")
	cw, err := draw.NewFormattedCanvas(figWidth, figHeight, format)
	if err != nil {
		return err
	}
	dc := draw.New(cw)
	dc.SetColor(color.White)
	dc.Fill(dc.Path())
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	legend.Draw(draw.Crop(dc, figWidth-legendWidth+vg.Points(8), 0, 0, -vg.Points(20)))

	out, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := cw.WriteTo(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// xTicks labels a log x axis at the measured values (the collector counts).
func xTicks(f Figure) plot.Ticker {
	seen := map[float64]bool{}
	var ticks plot.ConstantTicks
	for _, s := range f.Series {
		for _, p := range s.Points {
			if !seen[p[0]] {
				seen[p[0]] = true
				ticks = append(ticks, plot.Tick{Value: p[0], Label: strconv.FormatFloat(p[0], 'g', -1, 64)})
			}
		}
	}
	slices.SortFunc(ticks, func(a, b plot.Tick) int { return cmp.Compare(a.Value, b.Value) })
	return ticks
}

var shapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{},
	draw.PlusGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{},
}

// Render draws a figure to file, PNG or SVG by its extension.
func Render(f Figure, file string) error { return render(f, file) }
