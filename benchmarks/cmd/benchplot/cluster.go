package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/shardwise/shardwise/benchmarks/internal/cluster"
	"github.com/shardwise/shardwise/benchmarks/internal/report"
)

// readCluster reads the clusterload JSON summaries (-json files) in dir,
// ordered by targets, then collectors, then allocators.
func readCluster(dir string) ([]*cluster.Summary, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []*cluster.Summary
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var s cluster.Summary
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if len(s.Results) == 0 {
			return nil, fmt.Errorf("%s: no allocator results", f)
		}
		out = append(out, &s)
	}
	if len(out) == 0 {
		return nil, errors.New("no clusterload summaries (*.json)")
	}
	slices.SortStableFunc(out, func(a, b *cluster.Summary) int {
		if a.Targets != b.Targets {
			return a.Targets - b.Targets
		}
		if a.Collectors != b.Collectors {
			return a.Collectors - b.Collectors
		}
		return a.Allocators - b.Allocators
	})
	return out, nil
}

func runName(s *cluster.Summary) string {
	n := strconv.Itoa(s.Targets/1000) + "k targets, " + strconv.Itoa(s.Collectors) + " collectors"
	if s.Allocators > 1 {
		n += ", " + strconv.Itoa(s.Allocators) + " allocators"
	}
	return n
}

// clusterFigures are the RSS of the first allocator of each run over time,
// and the time to a complete assignment and peak RSS over the size, one line
// per collector count, single-allocator runs only.
func clusterFigures(runs []*cluster.Summary) []report.Figure {
	rss := report.Figure{
		ID: "cluster-rss", Title: "Allocator RSS over time (clusterload; first allocator of each run)",
		X: "seconds since start", Y: "RSS MiB", LogY: true, Floor: 1,
	}
	complete := report.Figure{
		ID: "cluster-complete", Title: "Start to every kept target served exactly once, and peak RSS",
		X: "kept targets", Y: "seconds or GiB", LogX: true, LogY: true, Floor: 0.01,
	}
	byCollectors := map[int]*[2]report.Series{}
	var order []int
	for _, s := range runs {
		r := s.Results[0]
		line := report.Series{Name: runName(s)}
		for _, p := range r.RSS {
			line.Points = append(line.Points, [2]float64{p.Seconds, p.RSSMiB})
		}
		rss.Series = append(rss.Series, line)
		if s.Allocators != 1 {
			continue
		}
		pair, ok := byCollectors[s.Collectors]
		if !ok {
			pair = &[2]report.Series{
				{Name: strconv.Itoa(s.Collectors) + " collectors: seconds"},
				{Name: strconv.Itoa(s.Collectors) + " collectors: peak RSS GiB"},
			}
			byCollectors[s.Collectors] = pair
			order = append(order, s.Collectors)
		}
		pair[0].Points = append(pair[0].Points, [2]float64{float64(r.Targets), r.CompleteSeconds})
		pair[1].Points = append(pair[1].Points, [2]float64{float64(r.Targets), r.RSSPeakMiB / 1024})
	}
	slices.Sort(order)
	for _, c := range order {
		complete.Series = append(complete.Series, byCollectors[c][0], byCollectors[c][1])
	}
	complete.Series = append(complete.Series, report.Series{Name: "budget: 5 s", Points: [][2]float64{{10_000, 5}, {300_000, 5}}})
	return []report.Figure{rss, complete}
}
