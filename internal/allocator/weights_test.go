package allocator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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
	api := queryAPI(t, samples, nil)
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

// queryAPI is a Prometheus-compatible query API answering every query with
// samples (by instance, job "w"); with allow set, a request it refuses gets
// 401.
func queryAPI(t *testing.T, samples map[string]float64, allow func(*http.Request) bool) *httptest.Server {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if allow != nil && !allow(r) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		var result []map[string]any
		for a, v := range samples {
			result = append(result, map[string]any{"metric": map[string]string{"job": "w", "instance": a}, "value": []any{1.7e9, fmt.Sprint(v)}})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": result}})
	}))
	t.Cleanup(api.Close)
	return api
}

// TestLearnedWeightsClientConfig: the weights block takes Prometheus' HTTP
// client keys, so a backend behind authentication and a multi-tenant one
// can be read: a bearer token from a file next to the config and a tenant
// header reach the API, which refuses requests without them.
func TestLearnedWeightsClientConfig(t *testing.T) {
	t.Parallel()
	samples := map[string]float64{"10.2.0.1:9100": 10, "10.2.0.2:9100": 20, "10.2.0.3:9100": 30}
	var refused atomic.Int32
	api := queryAPI(t, samples, func(r *http.Request) bool {
		ok := r.Header.Get("Authorization") == "Bearer s3cret" && r.Header.Get("X-Scope-OrgID") == "team-a"
		if !ok {
			refused.Add(1)
		}
		return ok
	})
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "token"), []byte("s3cret\n"), 0o600))
	path := filepath.Join(dir, "ta.yaml")
	cfg := fmt.Sprintf(`listen_addr: 127.0.0.1:0
weights:
  query_url: %s
  interval: 50ms
  authorization: {credentials_file: token}
  http_headers: {X-Scope-OrgID: {values: [team-a]}}
collectors: [c0, c1]
config:
  scrape_configs:
  - job_name: w
    static_configs: [{targets: [10.2.0.1:9100, 10.2.0.2:9100, 10.2.0.3:9100]}]
`, api.URL)
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	_, reg := start(t, path)
	eventually(t, func() bool { return metricOf(t, reg, "shardwise_allocator_learned_weights") == 3 })
	require.Zero(t, refused.Load(), "every request carried the token and the tenant")

	_, err := parseConfig([]byte("weights: {query_url: 'http://p:9090', authorization: {credentials: a, credentials_file: b}}\n"))
	require.ErrorContains(t, err, "weights")
}
