package server

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"weak"

	"github.com/gin-gonic/gin"

	"github.com/shardwise/shardwise/allocation"
)

//go:embed status.html
var statusHTML string

var statusTemplate = template.Must(template.New("status").Funcs(template.FuncMap{
	"jobLink": func(job string) string { return "/jobs/" + url.QueryEscape(job) + "/targets" },
}).Parse(statusHTML))

// Geometry of the bar chart, in SVG user units.
const (
	chartLabelWidth = 220
	chartBarWidth   = 640
	chartRowHeight  = 24
	chartBarHeight  = 16
	chartCountWidth = 90
	maxLookupHits   = 200
	// maxLookups is how many target lookups (?q=, a scan of every target)
	// run at once; more answer 429, so a burst of lookups cannot take the
	// allocator's CPU from the collectors it serves.
	maxLookups = 2
	// maxQueryBytes bounds a lookup's query.
	maxQueryBytes = 256
)

type statusPage struct {
	Generation  uint64
	Strategy    string
	Targets     int
	Unassigned  int
	Collectors  int
	Balance     string
	Chart       chart
	Jobs        []jobRow
	Rebalances  []rebalanceRow
	Query       string
	Hits        []lookupHit
	HitsCapped  bool
	Searched    bool
	ScrapeJobs  int
	ConfigReady bool
	Pprof       bool // link /debug/pprof/ (served only when enabled)
}

type chart struct {
	Width, Height int
	Bars          []bar
	MeanX         float64 // x of the mean-load line
	Mean          string
	LabelWidth    int
	BarHeight     int
}

type bar struct {
	Collector string
	Count     int
	Y         int // top of the row
	TextY     int
	Width     float64
	CountX    float64
}

type jobRow struct {
	Job     string
	Targets int
}

type rebalanceRow struct {
	Generation uint64
	Targets    int
	Collectors int
	Moved      int
	Min        int
	Ratio      string
	Unassigned int
	Duration   string
}

type lookupHit struct {
	Job, Address, Collector string
	Labels                  string
}

// statusCache holds the snapshot-derived part of the status page for the
// latest snapshot rendered: counting targets per job walks every
// (collector, job) slice, which must not happen on every request.
type statusCache struct {
	cur    atomic.Pointer[statusEntry]
	builds atomic.Int64 // snapshot summaries built, for tests
}

// statusEntry is keyed by the snapshot itself (weakly, so it does not keep
// the snapshot alive): generations of different allocators collide.
type statusEntry struct {
	snap weak.Pointer[allocation.Snapshot]
	page statusPage // the fields derived from the snapshot only
}

// summary returns the snapshot-derived fields of the status page.
func (c *statusCache) summary(snap *allocation.Snapshot) statusPage {
	key := weak.Make(snap)
	if e := c.cur.Load(); e != nil && e.snap == key {
		return e.page
	}
	c.builds.Add(1)
	e := &statusEntry{snap: key, page: summarize(snap)}
	c.cur.Store(e)
	return e.page
}

// status renders the human status page at /: target counts per collector as
// an inline SVG bar chart, balance, jobs, recent rebalances and a target
// lookup (?q= matches addresses and job names by substring). The summary is
// computed once per snapshot; a lookup scans the targets and stops at
// maxLookupHits.
func (s *Server) status(c *gin.Context) {
	snap := s.opts.Assignments.Snapshot()
	p := s.page.summary(snap)
	p.Query = strings.TrimSpace(c.Query("q"))
	p.ConfigReady = true
	p.Pprof = s.opts.EnablePprof
	if s.opts.ScrapeConfigs != nil {
		m, ready := s.opts.ScrapeConfigs.ScrapeConfigs()
		p.ScrapeJobs, p.ConfigReady = len(m), ready
	}
	if p.Query != "" {
		if len(p.Query) > maxQueryBytes {
			s.writeError(c, http.StatusBadRequest, fmt.Sprintf("the lookup query is longer than %d bytes", maxQueryBytes))
			return
		}
		select {
		case s.lookups <- struct{}{}:
		default:
			c.Header("Retry-After", "1")
			s.writeError(c, http.StatusTooManyRequests, fmt.Sprintf("%d target lookups are running; try again", maxLookups))
			return
		}
		p.Searched = true
		func() {
			defer func() { <-s.lookups }()
			p.Hits, p.HitsCapped = lookup(snap, p.Query)
		}()
	}
	var buf bytes.Buffer
	if err := statusTemplate.Execute(&buf, p); err != nil {
		s.log.Error("render status page", "err", err)
		s.writeError(c, http.StatusInternalServerError, "render status page")
		return
	}
	c.Header("X-Content-Type-Options", "nosniff")
	c.Data(http.StatusOK, "text/html; charset=utf-8", buf.Bytes())
}

// summarize computes the snapshot-derived fields of the status page. The
// result's slices are shared by every request for this snapshot and must
// not be modified.
func summarize(snap *allocation.Snapshot) statusPage {
	p := statusPage{
		Generation: snap.Generation(),
		Strategy:   snap.Strategy(),
		Targets:    snap.Targets(),
		Unassigned: len(snap.Unassigned()),
		Collectors: len(snap.Collectors()),
		Balance:    fmt.Sprintf("%.3f", snap.Balance()),
		Chart:      buildChart(snap),
	}
	jobIndex := make(map[string]int, len(snap.Jobs()))
	for _, job := range snap.Jobs() {
		jobIndex[job] = len(p.Jobs)
		n := 0
		for _, col := range snap.Collectors() {
			if sl := snap.Slice(col, job); sl != nil {
				n += len(sl.Targets)
			}
		}
		p.Jobs = append(p.Jobs, jobRow{Job: job, Targets: n})
	}
	for _, u := range snap.Unassigned() {
		// Unassigned targets still belong to their job's count.
		if i, ok := jobIndex[u.Job]; ok {
			p.Jobs[i].Targets++
		}
	}
	hist := snap.History()
	first := snap.Generation() - uint64(len(hist)) + 1
	for i := len(hist) - 1; i >= 0; i-- {
		r := hist[i]
		row := rebalanceRow{
			Generation: first + uint64(i),
			Targets:    r.Targets,
			Collectors: r.Collectors,
			Moved:      r.Moved,
			Min:        r.Min,
			Unassigned: r.Unassigned,
			Duration:   r.Duration.String(),
			Ratio:      "–",
		}
		if r.Min > 0 {
			row.Ratio = fmt.Sprintf("%.2f", float64(r.Moved)/float64(r.Min))
		}
		p.Rebalances = append(p.Rebalances, row)
	}
	return p
}

func buildChart(snap *allocation.Snapshot) chart {
	cols := snap.Collectors()
	loads := snap.Loads()
	peak, total := 0, 0
	for _, l := range loads {
		peak = max(peak, l)
		total += l
	}
	ch := chart{
		Width:      chartLabelWidth + chartBarWidth + chartCountWidth,
		Height:     max(1, len(cols))*chartRowHeight + 8,
		LabelWidth: chartLabelWidth,
		BarHeight:  chartBarHeight,
	}
	scale := 0.0
	if peak > 0 {
		scale = chartBarWidth / float64(peak)
	}
	for i, col := range cols {
		w := math.Max(1, float64(loads[i])*scale) // drawn even when empty
		y := 4 + i*chartRowHeight
		ch.Bars = append(ch.Bars, bar{
			Collector: col,
			Count:     loads[i],
			Y:         y + (chartRowHeight-chartBarHeight)/2,
			TextY:     y + chartRowHeight/2 + 5,
			Width:     w,
			CountX:    chartLabelWidth + w + 6,
		})
	}
	if len(cols) > 0 {
		mean := float64(total) / float64(len(cols))
		ch.Mean = fmt.Sprintf("%.1f", mean)
		ch.MeanX = chartLabelWidth + mean*scale
	}
	return ch
}

// lookup finds targets whose address or job contains q, assigned or not.
func lookup(snap *allocation.Snapshot, q string) (hits []lookupHit, capped bool) {
	add := func(t *allocation.Target, collector string) bool {
		if !strings.Contains(t.Address, q) && !strings.Contains(t.Job, q) {
			return true
		}
		if len(hits) == maxLookupHits {
			capped = true
			return false
		}
		hits = append(hits, lookupHit{Job: t.Job, Address: t.Address, Collector: collector, Labels: t.Labels.String()})
		return true
	}
	for _, job := range snap.Jobs() {
		for _, col := range snap.Collectors() {
			sl := snap.Slice(col, job)
			if sl == nil {
				continue
			}
			for _, t := range sl.Targets {
				if !add(t, col) {
					return hits, capped
				}
			}
		}
	}
	for _, t := range snap.Unassigned() {
		if !add(t, "") {
			break
		}
	}
	return hits, capped
}
