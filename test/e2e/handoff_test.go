package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// scrapeLog records every scrape of the handoff test's targets: when, and by
// which collector (the receiver's User-Agent is <collector id>/e2e).
type scrapeLog struct {
	mu sync.Mutex
	at map[string][]scrape // target name -> scrapes, in order
}

type scrape struct {
	when time.Time
	by   string
}

// startRecordingTarget is startTarget with every scrape recorded in log.
func startRecordingTarget(t *testing.T, log *scrapeLog, name string) string {
	t.Helper()
	body := fmt.Sprintf("# TYPE %[1]s gauge\n%[1]s{target=%[2]q} 1\n", targetMetric, name)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		by, _, _ := strings.Cut(r.UserAgent(), "/")
		log.mu.Lock()
		log.at[name] = append(log.at[name], scrape{time.Now(), by})
		log.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// handoffFigures are what one run measured over its window: the targets
// whose collector changed, the longest time any target went unscraped, and
// the target-seconds during which two collectors scraped one target.
type handoffFigures struct {
	moved      int
	longestGap time.Duration
	gapTarget  string
	overlap    float64
}

// figures measures the scrapes from start to end. A target counts as
// scraped by a collector from that collector's first to its last scrape of
// it in the window; a move is a change of the collector of consecutive
// scrapes.
func (l *scrapeLog) figures(start, end time.Time) handoffFigures {
	l.mu.Lock()
	defer l.mu.Unlock()
	var f handoffFigures
	for name, ss := range l.at {
		var in []scrape
		for _, s := range ss {
			if !s.when.Before(start) && !s.when.After(end) {
				in = append(in, s)
			}
		}
		spans := map[string][2]time.Time{}
		changed := false
		for i, s := range in {
			if i > 0 {
				if gap := s.when.Sub(in[i-1].when); gap > f.longestGap {
					f.longestGap, f.gapTarget = gap, name
				}
				changed = changed || s.by != in[i-1].by
			}
			sp, ok := spans[s.by]
			if !ok {
				sp[0] = s.when
			}
			sp[1] = s.when
			spans[s.by] = sp
		}
		if changed {
			f.moved++
		}
		var bys []string
		for by := range spans {
			bys = append(bys, by)
		}
		slices.Sort(bys)
		for i, a := range bys {
			for _, b := range bys[i+1:] {
				lo, hi := spans[a][0], spans[a][1]
				if spans[b][0].After(lo) {
					lo = spans[b][0]
				}
				if spans[b][1].Before(hi) {
					hi = spans[b][1]
				}
				if hi.After(lo) {
					f.overlap += hi.Sub(lo).Seconds()
				}
			}
		}
	}
	return f
}

// TestHandoff is issue 26's proof with the real client: Prometheus
// receivers poll the allocator as collectors, and a scale-up (a collector
// joins the static list, its receiver already polling) moves targets to it.
// With the handoff every target is scraped without a gap longer than its
// scrape interval plus jitter, the moved ones by both collectors for a
// while, and then by the new one only. With it off the old collector drops
// a moved target at its next poll and the new one starts once its receiver
// has reloaded, whichever comes first.
func TestHandoff(t *testing.T) {
	t.Parallel() // it mostly waits: beside TestHandoffPods
	bin := allocatorBin(t)
	const interval = time.Second
	const jitter = 500 * time.Millisecond
	results := map[bool]handoffFigures{}
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("handoff=%v", on), func(t *testing.T) {
			log := &scrapeLog{at: map[string][]scrape{}}
			var addrs []string
			for i := range 24 {
				addrs = append(addrs, startRecordingTarget(t, log, fmt.Sprintf("h%02d", i)))
			}
			scrapeConfigs := []any{map[string]any{
				"job_name":        "handoff",
				"scrape_interval": scrapeInterval,
				"scrape_timeout":  scrapeInterval,
				"static_configs":  []any{map[string]any{"targets": addrs}},
			}}
			config := func(collectors []string) map[string]any {
				c := allocatorConfig(collectors, scrapeConfigs)
				c["handoff"] = map[string]any{"enabled": on}
				return c
			}
			before, after := []string{"collector-0", "collector-1", "collector-2"}, []string{"collector-0", "collector-1", "collector-2", "collector-3"}
			alloc := startAllocator(t, bin, config(before))
			client := newAPI(alloc.url)
			alloc.eventually(t, convergeTimeout, "allocator serves the job", func() error {
				return client.contract([]string{"handoff"}, before)
			})
			startFleet(t, alloc.url, after)
			alloc.eventually(t, convergeTimeout, "every target scraped, each by one collector", func() error {
				now := time.Now()
				f := log.figures(now.Add(-3*time.Second), now)
				if n := len(log.scraped(now.Add(-2 * time.Second))); n != len(addrs) {
					return fmt.Errorf("%d of %d targets scraped in the last 2 s", n, len(addrs))
				}
				if f.overlap > 0 {
					return fmt.Errorf("%.1f target-seconds scraped twice", f.overlap)
				}
				return nil
			})

			start := time.Now()
			writeConfig(t, alloc.configFile, config(after))
			alloc.eventually(t, convergeTimeout, "allocator reloads the collector list", func() error {
				return client.expectCollectors([]string{"handoff"}, after)
			})
			// The new collector's first poll at least 10 s (the default
			// settle) after the move releases the old ones 10 s later, and
			// they drop the targets within their next poll and reloads
			// (receivers forward discovery and reload their scrape managers
			// at most every 5 s each): 35 s covers it.
			time.Sleep(35 * time.Second)
			f := log.figures(start, time.Now())
			results[on] = f
			t.Logf("handoff=%v: %d of %d targets moved, longest gap %v (%s), overlap %.1f target-seconds",
				on, f.moved, len(addrs), f.longestGap.Round(time.Millisecond), f.gapTarget, f.overlap)
			require.Positive(t, f.moved, "the scale-up must move targets")
			if on {
				require.LessOrEqual(t, f.longestGap, interval+jitter, "a target went unscraped longer than its interval plus jitter")
				require.Positive(t, f.overlap, "moved targets are scraped by both collectors for a while")
				// Every moved target ends with one collector.
				end := time.Now()
				require.Zero(t, log.figures(end.Add(-3*time.Second), end).overlap, "old collectors still scrape moved targets")
			}
		})
	}
	// Without the handoff the gap depends on the receivers' 5 s timers:
	// when the old collector applies its poll before the new one, the moved
	// targets go unscraped for up to ~10 s (6 s in one run, 1 s in another:
	// the figures are logged, not asserted).
	if off, ok := results[false]; ok {
		t.Logf("longest gap: %v with the handoff, %v without", results[true].longestGap.Round(time.Millisecond), off.longestGap.Round(time.Millisecond))
	}
}

// scraped returns the targets scraped since.
func (l *scrapeLog) scraped(since time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for name, ss := range l.at {
		if len(ss) > 0 && !ss[len(ss)-1].when.Before(since) {
			out = append(out, name)
		}
	}
	return out
}
