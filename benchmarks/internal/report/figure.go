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

// figures are the report's plots, in page order; a figure with nothing to
// draw (the ratio of a scenario whose minima are all 0) is left out.
func figures(r *Report, loads []scenario.Measurement, baseN int) []Figure {
	out := tableFigures(r.Table)
	if len(r.Sweep) > 0 {
		out = append(out, sweepFigures(r.Sweep)...)
	}
	if len(loads) > 0 {
		out = append(out, loadFigures(loads, baseN)...)
	}
	for _, sc := range r.Scenarios {
		out = append(out, scenarioFigures(sc)...)
	}
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

// groups splits items by key, keeping the order in which keys first appear.
func groups[T any, K comparable](items []T, key func(T) K) (order []K, by map[K][]T) {
	by = map[K][]T{}
	for _, it := range items {
		k := key(it)
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], it)
	}
	return order, by
}

// points are the points (x, val) of items; NaN values are left out.
func points[T any](items []T, x, val func(T) float64) [][2]float64 {
	var out [][2]float64
	for _, it := range items {
		if v := val(it); !math.IsNaN(v) {
			out = append(out, [2]float64{x(it), v})
		}
	}
	return out
}

// tableFigures plot the stability table, one line per strategy over N.
func tableFigures(table []scenario.Measurement) []Figure {
	order, byStrategy := groups(table, func(m scenario.Measurement) string { return m.Strategy })
	n := func(m scenario.Measurement) float64 { return float64(m.N) }
	tableFig := func(id, title, caption, y string, logY bool, floor float64, val func(scenario.Measurement) float64) Figure {
		f := Figure{ID: id, Section: sectionTable, Title: title, Caption: caption, X: "collectors N", Y: y, LogX: true, LogY: logY, Floor: floor}
		for _, s := range order {
			f.Series = append(f.Series, Series{Name: s, Points: points(byStrategy[s], n, val)})
		}
		return f
	}
	return []Figure{
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
	}
}

// sweepFigures plot the ε sweep, one line per N over ε.
func sweepFigures(sweep []SweepRow) []Figure {
	ns, byN := groups(sweep, func(s SweepRow) int { return s.N })
	eps := func(s SweepRow) float64 { return s.Epsilon }
	sweepFig := func(id, title, caption, y string, val func(SweepRow) float64) Figure {
		f := Figure{ID: id, Section: sectionSweep, Title: title, Caption: caption, X: "ε", Y: y}
		for _, n := range ns {
			f.Series = append(f.Series, Series{Name: fmt.Sprintf("N=%d", n), Points: points(byN[n], eps, val)})
		}
		return f
	}
	return []Figure{
		sweepFig("sweep-join-ratio", "consistent-hashing: join movement over ε", "Targets moved / ⌊T/(N+1)⌋ when one collector joins.", "moved / minimum",
			func(s SweepRow) float64 { return ratioOrNaN(s.MovedJoin, s.MinJoin) }),
		sweepFig("sweep-leave-ratio", "consistent-hashing: leave movement over ε", "Targets moved / what the leaver held.", "moved / minimum",
			func(s SweepRow) float64 { return ratioOrNaN(s.MovedLeave, s.MinLeave) }),
		sweepFig("sweep-balance", "consistent-hashing: balance over ε", "Busiest collector over the mean, after the first assignment.", "max / mean",
			func(s SweepRow) float64 { return s.Balance }),
	}
}

// loadFigures plot the per-collector load before and after a join at the
// scenarios' N, baseN.
func loadFigures(loads []scenario.Measurement, baseN int) []Figure {
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
	return []Figure{
		loadFig("loads-before-join", fmt.Sprintf("Load per collector before the join (N=%d)", baseN), false),
		loadFig("loads-after-join", fmt.Sprintf("Load per collector after the join (N=%d)", baseN+1), true),
	}
}

// scenarioFigures plot a scenario, one line per strategy over the steps
// after the first assignment.
func scenarioFigures(sc ScenarioRun) []Figure {
	index := func(st scenario.Step) float64 { return float64(st.Index) }
	stepFig := func(kind, title, caption, y string, logY bool, floor float64, val func(scenario.Step) float64) Figure {
		f := Figure{ID: sc.Name + "-" + kind, Section: sc.Name, Title: sc.Name + ": " + title, Caption: caption, X: "step", Y: y, LogY: logY, Floor: floor}
		for _, res := range sc.Results {
			f.Series = append(f.Series, Series{Name: res.Strategy, Points: points(res.Steps[1:], index, val)})
		}
		return f
	}
	return []Figure{
		stepFig("ratio", "targets moved / minimum per step", "Steps whose minimum is 0 are left out (see the next figure); 0 is drawn at 0.01.", "moved / minimum", true, 0.01,
			func(st scenario.Step) float64 { return ratioOrNaN(st.Moved, st.Min) }),
		stepFig("moved", "targets moved per step, % of the targets kept", "Only targets present before and after the step count; 0 is drawn at 0.001%.", "moved % of kept", true, 0.001,
			func(st scenario.Step) float64 { return 100 * ratioOrNaN(st.Moved, st.Kept) }),
		stepFig("balance", "balance per step", "Busiest collector's load over the mean after each step.", "max / mean", false, 0,
			func(st scenario.Step) float64 { return st.Balance }),
		stepFig("ms", "update time per step", "Wall time of the SetCollectors or SetJobTargets call.", "ms", true, 0.001,
			func(st scenario.Step) float64 { return st.MS }),
	}
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
		if err := addSeries(p, &legend, f, i, s); err != nil {
			return err
		}
		drawn++
	}
	if drawn == 0 {
		return fmt.Errorf("figure %s: nothing to draw", f.ID)
	}
	fitAxes(p, f)
	return writePlot(p, &legend, file)
}

// addSeries draws the i-th series s of f as a line, with a marker at each
// point when there are at most 40, and adds it to the legend.
func addSeries(p *plot.Plot, legend *plot.Legend, f Figure, i int, s Series) error {
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
	return nil
}

// fitAxes adjusts the ranges gonum picked from the data: a linear y axis
// starts at 0 unless the data fill most of it, and a log axis gets a
// positive, non-empty range.
func fitAxes(p *plot.Plot, f Figure) {
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
}

// writePlot draws the plot on the left of a white canvas and the legend in a
// column on its right, and writes it to file in the format its extension
// names.
func writePlot(p *plot.Plot, legend *plot.Legend, file string) error {
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
