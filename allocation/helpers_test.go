package allocation

import (
	"fmt"
	"strconv"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"
)

// makeTargets returns n targets spread over jobs, with identities that
// include the job as discovery's do. seed varies the identities.
func makeTargets(n, jobs int, seed string) map[string][]*Target {
	out := make(map[string][]*Target, jobs)
	for i := range n {
		job := "job-" + strconv.Itoa(i%jobs)
		addr := fmt.Sprintf("10.%d.%d.%d:9100", i>>16&255, i>>8&255, i&255)
		out[job] = append(out[job], &Target{
			Job:     job,
			Hash:    xxhash.Sum64String(seed + "\xff" + job + "\xff" + addr),
			Address: addr,
			Labels:  discovered("__address__", addr, "job", job),
		})
	}
	return out
}

func makeCollectors(n int) []Collector {
	cs := make([]Collector, n)
	for i := range cs {
		cs[i] = Collector{Name: "collector-" + strconv.Itoa(i)}
	}
	return cs
}

// assignment maps every target identity to its collector ("" unassigned).
func assignment(s *Snapshot) map[uint64]string {
	m := make(map[uint64]string, s.Targets())
	x := s.index()
	for i, h := range x.hashes {
		m[h] = s.collectors[x.owner[i]]
	}
	for _, t := range s.Unassigned() {
		m[t.Hash] = ""
	}
	return m
}

func moved(before, after map[uint64]string) int {
	n := 0
	for h, c := range before {
		if a, ok := after[h]; ok && c != "" && a != c {
			n++
		}
	}
	return n
}

func mustNew(tb interface{ Fatal(...any) }, opts Options) *Allocator {
	a, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

func discovered(kv ...string) Discovered { return DiscoveredOf(labels.FromStrings(kv...)) }
