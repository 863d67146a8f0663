package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAllocatorRestartKeepsJobs is issue 11 item 2 end to end: the
// allocator restarts while real Prometheus receivers scrape through it.
// Between the stop and the new process's first complete state the
// receivers keep their jobs and targets (the allocator answers errors, not
// {} or [], until it is ready), so every target stays scraped throughout.
func TestAllocatorRestartKeepsJobs(t *testing.T) {
	bin := allocatorBin(t)
	jobs := []string{"serviceMonitor/ns/app/0", "static job"}
	var (
		targets       []target
		scrapeConfigs []any
	)
	n := 0
	for _, job := range jobs {
		var addrs []string
		for range 3 {
			tg := startTarget(t, fmt.Sprintf("r%02d", n), job, n)
			n++
			targets = append(targets, tg)
			addrs = append(addrs, tg.addr)
		}
		scrapeConfigs = append(scrapeConfigs, map[string]any{
			"job_name":        job,
			"scrape_interval": scrapeInterval,
			"scrape_timeout":  scrapeInterval,
			"static_configs":  []any{map[string]any{"targets": addrs}},
		})
	}
	collectors := []string{"collector-0", "collector-1"}
	alloc := startAllocator(t, bin, allocatorConfig(collectors, scrapeConfigs))
	client := newAPI(alloc.url)
	alloc.eventually(t, convergeTimeout, "allocator serves every job", func() error {
		return client.contract(jobs, collectors)
	})
	fleet := startFleet(t, alloc.url, collectors)
	alloc.eventually(t, convergeTimeout, "receivers scrape exactly their assigned targets", func() error {
		owner, err := client.assignment(jobs, collectors)
		if err != nil {
			return err
		}
		return expectExclusive(targets, collectors, owner, fleet.recent())
	})

	// everyTargetScraped fails the test when a target went unscraped for
	// longer than recentScrapeWindow: its job disappeared from a receiver.
	everyTargetScraped := func(when string) {
		seen := fleet.recent()
		for _, tg := range targets {
			require.NotEmpty(t, seen[tg.name], "%s: target %s of job %q not scraped within %s", when, tg.name, tg.job, recentScrapeWindow)
		}
	}
	for round := range 2 {
		alloc.restart(t)
		restarted := time.Now()
		ready := false
		// Through the restart, until the new process is ready and a few
		// polls and scrapes later.
		for !ready || time.Since(restarted) < 10*time.Second {
			everyTargetScraped(fmt.Sprintf("restart %d, %s after it", round+1, time.Since(restarted).Round(100*time.Millisecond)))
			if resp, err := http.Get(alloc.url + "/readyz"); err == nil {
				ready = ready || resp.StatusCode == http.StatusOK
				_ = resp.Body.Close()
			}
			require.Less(t, time.Since(restarted), readyTimeout, "not ready after the restart")
			time.Sleep(pollEvery)
		}
		t.Logf("restart %d: every target scraped throughout", round+1)
	}
	alloc.eventually(t, convergeTimeout, "receivers scrape exactly their assigned targets after the restarts", func() error {
		owner, err := client.assignment(jobs, collectors)
		if err != nil {
			return err
		}
		return expectExclusive(targets, collectors, owner, fleet.recent())
	})
}
