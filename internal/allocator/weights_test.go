package allocator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLearnedWeights: with weights.query_url the allocator reads each
// target's samples from a Prometheus-compatible API and assigns by weight:
// the learned weights show in shardwise_allocator_learned_weights, and no
// collector holds more than (1+ε)·mean + the heaviest target's weight.
func TestLearnedWeights(t *testing.T) {
	t.Parallel()
	var targets []string
	samples := map[string]float64{}
	for i := range 40 {
		a := fmt.Sprintf("10.1.0.%d:9100", i)
		targets = append(targets, a)
		samples[a] = 10
		if i%8 == 0 {
			samples[a] = 4000 // five heavy targets
		}
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var result []map[string]any
		for a, v := range samples {
			result = append(result, map[string]any{"metric": map[string]string{"job": "w", "instance": a}, "value": []any{1.7e9, fmt.Sprint(v)}})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": result}})
	}))
	t.Cleanup(api.Close)
	dir := t.TempDir()
	path := filepath.Join(dir, "ta.yaml")
	cfg := fmt.Sprintf("listen_addr: 127.0.0.1:0\nweights: {query_url: %s, interval: 50ms}\ncollectors: [c0, c1, c2, c3]\nconfig:\n  scrape_configs:\n  - job_name: w\n    static_configs: [{targets: [%s]}]\n",
		api.URL, strings.Join(targets, ", "))
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	base, reg := start(t, path)
	eventually(t, func() bool { return metricOf(t, reg, "shardwise_allocator_learned_weights") == 40 })

	var total, heaviest float64
	for _, v := range samples {
		total += v
		heaviest = max(heaviest, v)
	}
	bound := 1.05*total/4 + heaviest*1.1 // the weights are on a 10 % scale
	eventually(t, func() bool {
		served := 0
		for c, addrs := range assigned(t, base, "w", "c0", "c1", "c2", "c3") {
			load := 0.0
			for _, a := range addrs {
				load += samples[a]
				served++
			}
			if load > bound {
				t.Logf("%s holds %.0f, bound %.0f", c, load, bound)
				return false
			}
		}
		return served == 40
	})
}
