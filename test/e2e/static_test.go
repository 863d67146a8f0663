package e2e

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// staticJobs are the jobs of TestStaticCollectors: names with '/', spaces and
// both, so they must round-trip through url.QueryEscape in the receiver's
// http_sd URL ("static job" becomes "static+job").
var staticJobs = []struct {
	name    string
	targets int
}{
	{"serviceMonitor/ns/app/0", 4},
	{"static job", 3},
	{"podMonitor/e2e ns/web app/1", 3},
	{"plain", 2},
}

// droppedJob holds one extra target that its relabel_configs drop.
const droppedJob = "static job"

// TestStaticCollectors runs the allocator on static_configs and a static
// collector list, with one real Prometheus receiver per collector id, and
// checks that every target is scraped exactly once, by the collector the
// allocator assigns it to; then changes the collector list in the config file
// (a collector leaves, then another joins) and checks that the receivers
// follow.
func TestStaticCollectors(t *testing.T) {
	bin := allocatorBin(t)

	var targets []target
	var jobNames []string
	var scrapeConfigs []any
	n := 0
	for _, job := range staticJobs {
		jobNames = append(jobNames, job.name)
		var addrs []string
		for range job.targets {
			tg := startTarget(t, fmt.Sprintf("t%02d", n), job.name, n)
			n++
			targets = append(targets, tg)
			addrs = append(addrs, tg.addr)
		}
		groups := []any{map[string]any{"targets": addrs, "labels": map[string]any{"team": "e2e"}}}
		sc := map[string]any{
			"job_name":        job.name,
			"scrape_interval": scrapeInterval,
			"scrape_timeout":  scrapeInterval,
			"metrics_path":    "/metrics",
		}
		if job.name == droppedJob {
			tg := startTarget(t, fmt.Sprintf("t%02d", n), job.name, n)
			n++
			tg.dropped = true
			targets = append(targets, tg)
			groups = append(groups, map[string]any{"targets": []string{tg.addr}, "labels": map[string]any{"drop": "yes"}})
			sc["relabel_configs"] = []any{map[string]any{
				"source_labels": []string{"drop"},
				"regex":         "yes",
				"action":        "drop",
			}}
		}
		sc["static_configs"] = groups
		scrapeConfigs = append(scrapeConfigs, sc)
	}

	// collector-3 polls from the start but is not in the list until the last
	// step: until then the allocator must give it nothing.
	all := []string{"collector-0", "collector-1", "collector-2", "collector-3"}
	steps := []struct {
		name       string
		collectors []string
	}{
		{"three collectors", []string{"collector-0", "collector-1", "collector-2"}},
		{"collector-2 leaves", []string{"collector-0", "collector-1"}},
		{"collector-3 joins", []string{"collector-0", "collector-1", "collector-3"}},
	}

	alloc := startAllocator(t, bin, allocatorConfig(steps[0].collectors, scrapeConfigs))
	client := newAPI(alloc.url)
	alloc.eventually(t, convergeTimeout, "allocator serves every job as the contract says", func() error {
		return client.contract(jobNames, steps[0].collectors)
	})

	fleet := startFleet(t, alloc.url, all)

	var prev map[string]string
	for i, step := range steps {
		if i > 0 {
			writeConfig(t, alloc.configFile, allocatorConfig(step.collectors, scrapeConfigs))
			// Until the allocator has reloaded, the old assignment would pass
			// the check below: wait for the new collector set first.
			alloc.eventually(t, convergeTimeout, step.name+": allocator reloads the collector list", func() error {
				return client.expectCollectors(jobNames, step.collectors)
			})
		}
		var owner map[string]string
		alloc.eventually(t, convergeTimeout, step.name+": receivers scrape exactly their assigned targets", func() error {
			var err error
			owner, err = client.assignment(jobNames, all)
			if err != nil {
				return err
			}
			return expectExclusive(targets, step.collectors, owner, fleet.recent())
		})
		t.Logf("%s: targets per collector %v", step.name, countByCollector(owner))
		if prev != nil {
			t.Logf("%s: %d of %d targets moved", step.name, moved(prev, owner), len(owner))
		}
		prev = owner
	}

	// The series arrived under their job names, '/' and spaces intact.
	for name, jobs := range fleet.jobs() {
		i := slices.IndexFunc(targets, func(tg target) bool { return tg.name == name })
		require.GreaterOrEqual(t, i, 0, "unknown target %s", name)
		require.Equal(t, []string{targets[i].job}, jobs, "job (service.name) of %s", name)
	}
}
