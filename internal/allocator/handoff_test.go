package allocator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// TestHandoffProcess: through the allocator process over HTTP, a target
// that a joining collector takes is served to the joiner at once and still
// to its previous collector until the joiner has polled the job; then only
// to the joiner. The release shows in the handoff metrics.
func TestHandoffProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "ta.yaml")
	var targets []string
	for i := range 60 {
		targets = append(targets, fmt.Sprintf("10.0.0.%d:9100", i))
	}
	b, err := json.Marshal([]map[string]any{{"targets": targets}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "t.json"), b, 0o600))
	writeConfig := func(collectors ...string) {
		// settle 1ns: the joiner's first poll releases the others (the
		// default gives a receiver 10 s to start scraping).
		cfg := fmt.Sprintf("listen_addr: 127.0.0.1:0\nhandoff: {settle: 1ns}\ncollectors: [%s]\nconfig:\n  scrape_configs:\n  - job_name: j\n    file_sd_configs: [{files: [t.json]}]\n", strings.Join(collectors, ", "))
		tmp := path + ".tmp"
		require.NoError(t, os.WriteFile(tmp, []byte(cfg), 0o600))
		require.NoError(t, os.Rename(tmp, path))
	}
	writeConfig("c0", "c1", "c2")
	base, reg := start(t, path)
	poll := func(c string) map[string]bool {
		code, body := status(t, base+"/jobs/j/targets?collector_id="+c)
		require.Equal(t, http.StatusOK, code, body)
		var groups []struct {
			Targets []string `json:"targets"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &groups))
		got := map[string]bool{}
		for _, g := range groups {
			for _, a := range g.Targets {
				got[a] = true
			}
		}
		return got
	}
	before := map[string]string{}
	eventually(t, func() bool {
		clear(before)
		for _, c := range []string{"c0", "c1", "c2"} {
			for a := range poll(c) {
				before[a] = c
			}
		}
		return len(before) == len(targets)
	})

	writeConfig("c0", "c1", "c2", "c3")
	// The joiner's poll would release the others: wait on the whole-job
	// view, which records no poll.
	eventually(t, func() bool {
		_, body := status(t, base+"/jobs/j/targets")
		return strings.Contains(body, `"c3"`)
	})
	old := map[string]map[string]bool{}
	for _, c := range []string{"c0", "c1", "c2"} {
		old[c] = poll(c)
	}
	lingering := metricOf(t, reg, "shardwise_allocator_handoff_lingering_targets")
	joiner := poll("c3")
	require.NotEmpty(t, joiner)
	for a := range joiner {
		require.True(t, old[before[a]][a], "%s moved to c3 and is still served to %s until c3 polls", a, before[a])
	}
	require.InDelta(t, float64(len(joiner)), lingering, 0, "one lingering pair per target c3 took")

	// c3 has polled: the previous collectors no longer get what it took.
	for _, c := range []string{"c0", "c1", "c2"} {
		for a := range poll(c) {
			require.False(t, joiner[a], "%s is still served to %s after c3 polled", a, c)
		}
	}
	require.Zero(t, metricOf(t, reg, "shardwise_allocator_handoff_lingering_targets"))
	require.Positive(t, metricOf(t, reg, "shardwise_allocator_handoff_moves_total"))
}

// metricOf returns the value of the metric name (one series) in reg.
func metricOf(t *testing.T, reg interface {
	Gather() ([]*dto.MetricFamily, error)
}, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			return m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}
