package allocator

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var randomSteps = flag.Int("random-steps", 100, "steps of TestRandomSteps (issue 11 asks for 1000: -random-steps=1000)")

// TestRandomSteps is issue 11's fault proof b: random steps (a job's targets
// change, a job is added or removed, a collector joins or leaves, a
// collector flaps out and back, the config is rewritten unchanged) through
// the whole allocator process (file_sd jobs, a static collector list, over
// HTTP). After every step the served state converges to the model and every
// target is served to exactly one collector.
func TestRandomSteps(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, uint64(*randomSteps)))
	dir := t.TempDir()
	path := filepath.Join(dir, "ta.yaml")
	jobs := map[string][]string{} // job -> targets
	collectors := []string{"c0", "c1", "c2"}
	nextTarget := 0
	newTargets := func() []string {
		n := rng.IntN(8)
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("t%d:9", nextTarget)
			nextTarget++
		}
		return out
	}
	writeAtomic := func(p string, b []byte) {
		tmp := p + ".tmp"
		require.NoError(t, os.WriteFile(tmp, b, 0o600))
		require.NoError(t, os.Rename(tmp, p))
	}
	writeTargets := func(job string) {
		b, err := json.Marshal([]map[string]any{{"targets": jobs[job]}})
		require.NoError(t, err)
		writeAtomic(filepath.Join(dir, job+".json"), b)
	}
	writeConfig := func() {
		var b strings.Builder
		// No handoff: the test checks that every target is served to exactly
		// one collector after each step (TestHandoffProcess covers the
		// handoff through the process).
		fmt.Fprintf(&b, "listen_addr: 127.0.0.1:0\nhandoff: {enabled: false}\ncollectors: [%s]\nconfig:\n  scrape_configs:\n", strings.Join(collectors, ", "))
		names := slices.Sorted(func(yield func(string) bool) {
			for j := range jobs {
				if !yield(j) {
					return
				}
			}
		})
		for _, j := range names {
			fmt.Fprintf(&b, "  - job_name: %s\n    file_sd_configs: [{files: [%s.json]}]\n", j, j)
		}
		writeAtomic(path, []byte(b.String()))
	}
	for i := range 3 {
		j := fmt.Sprintf("job%d", i)
		jobs[j] = newTargets()
		writeTargets(j)
	}
	nextJob := 3
	writeConfig()
	base, _ := start(t, path)

	// converged reports whether every model target is served exactly once
	// and nothing else is served; it fails the test on a duplicate.
	converged := func() bool {
		var cfgs map[string]any
		code, body := status(t, base+"/scrape_configs")
		if code != http.StatusOK || json.Unmarshal([]byte(body), &cfgs) != nil || len(cfgs) != len(jobs) {
			return false
		}
		for job, want := range jobs {
			if _, ok := cfgs[job]; !ok {
				return false
			}
			// One response for every collector: one snapshot, so a target
			// served twice is a real duplicate.
			code, body := status(t, base+"/jobs/"+url.QueryEscape(job)+"/targets")
			if code != http.StatusOK {
				return false
			}
			var byCollector map[string]struct {
				Targets []struct {
					Targets []string `json:"targets"`
				} `json:"targets"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &byCollector))
			served := map[string]string{}
			for c, v := range byCollector {
				if !slices.Contains(collectors, c) {
					return false // an old snapshot
				}
				for _, g := range v.Targets {
					for _, a := range g.Targets {
						require.NotContains(t, served, a, "target %s of %s served to %s and %s", a, job, served[a], c)
						served[a] = c
					}
				}
			}
			if len(served) != len(want) {
				return false
			}
			for _, a := range want {
				if _, ok := served[a]; !ok {
					return false
				}
			}
		}
		return true
	}
	eventually(t, converged)

	for step := range *randomSteps {
		switch k := rng.IntN(6); {
		case k == 0 || len(jobs) == 0: // a job's targets change (or a job appears)
			if len(jobs) == 0 {
				j := fmt.Sprintf("job%d", nextJob)
				nextJob++
				jobs[j] = newTargets()
				writeTargets(j)
				writeConfig()
				break
			}
			fallthrough
		case k == 1:
			js := slices.Sorted(mapKeys(jobs))
			j := js[rng.IntN(len(js))]
			jobs[j] = newTargets()
			writeTargets(j)
		case k == 2: // a job is added, or removed
			if rng.IntN(2) == 0 && len(jobs) > 1 {
				js := slices.Sorted(mapKeys(jobs))
				delete(jobs, js[rng.IntN(len(js))])
			} else {
				j := fmt.Sprintf("job%d", nextJob)
				nextJob++
				jobs[j] = newTargets()
				writeTargets(j)
			}
			writeConfig()
		case k == 3: // a collector joins or leaves
			if rng.IntN(2) == 0 && len(collectors) > 1 {
				i := rng.IntN(len(collectors))
				collectors = slices.Delete(slices.Clone(collectors), i, i+1)
			} else if c := fmt.Sprintf("c%d", rng.IntN(6)); !slices.Contains(collectors, c) {
				collectors = append(slices.Clone(collectors), c)
			}
			writeConfig()
		case k == 4: // a collector flaps: out, then back
			c := collectors[rng.IntN(len(collectors))]
			rest := slices.DeleteFunc(slices.Clone(collectors), func(x string) bool { return x == c })
			if len(rest) > 0 {
				saved := collectors
				collectors = rest
				writeConfig()
				eventually(t, converged)
				collectors = saved
				writeConfig()
			}
		default: // the config is rewritten unchanged
			writeConfig()
		}
		eventually(t, converged)
		if t.Failed() {
			t.Fatalf("step %d", step)
		}
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
