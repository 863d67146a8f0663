package server

import (
	"cmp"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	commonconfig "github.com/prometheus/common/config"
	promconfig "github.com/prometheus/prometheus/config"
	_ "github.com/prometheus/prometheus/discovery/file"       // file_sd_configs
	_ "github.com/prometheus/prometheus/discovery/http"       // http_sd_configs
	_ "github.com/prometheus/prometheus/discovery/kubernetes" // kubernetes_sd_configs
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"
	k8syaml "sigs.k8s.io/yaml"
)

// Secret values in the fixture; none may appear over plain HTTP.
var fixtureSecrets = []string{"basic-s3cret", "oauth-s3cret", "bearer-s3cret", "sd-s3cret", "k8s-s3cret", "proxy-s3cret", "header-s3cret"}

const fixtureYAML = `
scrape_configs:
- job_name: serviceMonitor/ns/app/0
  scrape_interval: 15s
  honor_labels: true
  metrics_path: /custom
  params: {module: [http_2xx]}
  basic_auth: {username: user, password: basic-s3cret}
  relabel_configs:
  - source_labels: [__meta_kubernetes_pod_label_app]
    regex: (.+)
    target_label: app
  - action: labeldrop
    regex: tmp_.*
  - source_labels: [__address__]
    modulus: 4
    target_label: __tmp_hash
    action: hashmod
  metric_relabel_configs:
  - source_labels: [__name__]
    regex: go_.*
    action: drop
  kubernetes_sd_configs:
  - role: endpointslice
    api_server: https://kubernetes.example:6443
    namespaces: {names: [ns]}
    bearer_token: k8s-s3cret
- job_name: oauth
  oauth2:
    client_id: id
    client_secret: oauth-s3cret
    token_url: http://token.example/
    endpoint_params: {a: b}
    proxy_url: http://proxyuser:proxy-s3cret@proxy.example:3128/
  tls_config: {insecure_skip_verify: true, server_name: x.example}
  http_sd_configs:
  - url: http://sd.example/targets
    basic_auth: {username: sd, password: sd-s3cret}
- job_name: bearer
  authorization: {credentials: bearer-s3cret}
  http_headers:
    X-Token: {secrets: [header-s3cret], values: [plain]}
  static_configs:
  - targets: [a:1, b:2]
    labels: {env: prod}
  file_sd_configs:
  - files: [/etc/sd/*.json]
    refresh_interval: 1m
- job_name: static job
  static_configs:
  - targets: ["localhost:9090"]
`

// loadFixture parses the fixture as the allocator's config loader would.
func loadFixture(t testing.TB, src string) map[string]*promconfig.ScrapeConfig {
	t.Helper()
	cfg, err := promconfig.Load(src, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	out := map[string]*promconfig.ScrapeConfig{}
	for _, sc := range cfg.ScrapeConfigs {
		out[sc.JobName] = sc
	}
	return out
}

// reference is what upstream serves: yaml.v2 to YAML, YAML to JSON, with
// Prometheus' default (redacting) secret marshalling.
func reference(t testing.TB, configs map[string]*promconfig.ScrapeConfig) []byte {
	t.Helper()
	require.False(t, commonconfig.MarshalSecretValue, "nobody flips the global")
	y, err := yaml.Marshal(configs)
	require.NoError(t, err)
	j, err := k8syaml.YAMLToJSON(y)
	require.NoError(t, err)
	return j
}

func TestEncodeMatchesPrometheusMarshaller(t *testing.T) {
	t.Parallel()
	configs := loadFixture(t, fixtureYAML)
	got, err := encodeScrapeConfigs(configs, false)
	require.NoError(t, err)
	require.JSONEq(t, string(reference(t, configs)), string(got))
	for _, s := range fixtureSecrets {
		require.NotContains(t, string(got), s)
	}
	require.Contains(t, string(got), `"password":"<secret>"`)
}

// decode reads a /scrape_configs body as the collector's Prometheus
// receiver does: yaml.v2 into ScrapeConfigs, then validation.
func decode(t testing.TB, body []byte) map[string]*promconfig.ScrapeConfig {
	t.Helper()
	out := map[string]*promconfig.ScrapeConfig{}
	require.NoError(t, yaml.Unmarshal(body, &out), string(body))
	for _, sc := range out {
		require.NoError(t, sc.Validate(promconfig.DefaultGlobalConfig))
	}
	return out
}

func TestEncodeRevealRoundTrips(t *testing.T) {
	t.Parallel()
	configs := loadFixture(t, fixtureYAML)
	revealed, err := encodeScrapeConfigs(configs, true)
	require.NoError(t, err)
	for _, s := range fixtureSecrets {
		require.Contains(t, string(revealed), s)
	}
	require.NotContains(t, string(revealed), secretToken)
	require.NotContains(t, string(revealed), "xxxxx", "URL passwords are secrets too")

	back := decode(t, revealed)
	require.Equal(t, commonconfig.Secret("basic-s3cret"), back["serviceMonitor/ns/app/0"].HTTPClientConfig.BasicAuth.Password)
	require.Equal(t, commonconfig.Secret("oauth-s3cret"), back["oauth"].HTTPClientConfig.OAuth2.ClientSecret)
	require.Equal(t, commonconfig.Secret("bearer-s3cret"), back["bearer"].HTTPClientConfig.Authorization.Credentials)
	// A fixed point: what the client reads serializes to the same bytes.
	again, err := encodeScrapeConfigs(back, true)
	require.NoError(t, err)
	require.JSONEq(t, string(revealed), string(again))
}

func TestEncodeRelabelPitfalls(t *testing.T) {
	t.Parallel()
	configs := loadFixture(t, `
scrape_configs:
- job_name: j
  static_configs: [{targets: ["a:1"]}]
  relabel_configs:
  - source_labels: [__meta_x]
    target_label: cleared
    replacement: ""
  - source_labels: [a]
    target_label: b
    action: keepequal
  - source_labels: [a]
    target_label: b
    action: dropequal
  - target_label: c
    replacement: "$1"
  metric_relabel_configs:
  - target_label: d
    replacement: ""
`)
	for _, reveal := range []bool{false, true} {
		out, err := encodeScrapeConfigs(configs, reveal)
		require.NoError(t, err)
		back := decode(t, out) // keepequal with a regex would fail here
		rcs := back["j"].RelabelConfigs
		require.Len(t, rcs, 4)
		require.Empty(t, rcs[0].Replacement, "an explicit empty replacement survives")
		require.Equal(t, "$1", rcs[3].Replacement)
		require.Empty(t, back["j"].MetricRelabelConfigs[0].Replacement)

		// The upstream marshaller loses it: that is the pitfall.
		lost := decode(t, reference(t, map[string]*promconfig.ScrapeConfig{"j": {JobName: "j", RelabelConfigs: configs["j"].RelabelConfigs[:1]}}))
		require.Equal(t, "$1", lost["j"].RelabelConfigs[0].Replacement)
	}
}

func TestScrapeConfigsEndpoint(t *testing.T) {
	t.Parallel()
	configs := loadFixture(t, fixtureYAML)
	tests := []struct {
		name     string
		src      *fakeConfigs
		insecure bool
		code     int // 200 when zero
		want     func(t *testing.T, body string)
	}{
		// Not ready: an error, so that the receiver keeps the jobs it has.
		{name: "not ready yet", src: &fakeConfigs{}, code: http.StatusServiceUnavailable, want: func(t *testing.T, body string) { require.Contains(t, body, "not ready") }},
		{name: "no configs", src: &fakeConfigs{m: map[string]*promconfig.ScrapeConfig{}, ready: true}, want: func(t *testing.T, body string) { require.Equal(t, "{}", body) }},
		{name: "redacted over plain HTTP", src: &fakeConfigs{m: configs, ready: true}, want: func(t *testing.T, body string) {
			for _, s := range fixtureSecrets {
				require.NotContains(t, body, s)
			}
			require.Contains(t, body, `"<secret>"`)
			var jobs map[string]map[string]any
			require.NoError(t, json.Unmarshal([]byte(body), &jobs))
			require.Len(t, jobs, 4)
			require.Equal(t, "serviceMonitor/ns/app/0", jobs["serviceMonitor/ns/app/0"]["job_name"])
			require.Equal(t, "15s", jobs["serviceMonitor/ns/app/0"]["scrape_interval"])
			require.Contains(t, jobs["serviceMonitor/ns/app/0"], "kubernetes_sd_configs")
		}},
		{name: "revealed when insecure delivery is allowed", src: &fakeConfigs{m: configs, ready: true}, insecure: true, want: func(t *testing.T, body string) {
			for _, s := range fixtureSecrets {
				require.Contains(t, body, s)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, newAllocator(t, 1, nil), tc.src, func(o *Options) { o.AllowInsecureSecrets = tc.insecure })
			w := get(t, s.Handler(), "/scrape_configs")
			require.Equal(t, cmp.Or(tc.code, http.StatusOK), w.Code)
			require.Equal(t, "application/json", w.Header().Get("Content-Type"))
			tc.want(t, w.Body.String())
		})
	}
}

func TestScrapeConfigsCachedPerMap(t *testing.T) {
	t.Parallel()
	src := &fakeConfigs{m: loadFixture(t, fixtureYAML), ready: true}
	s := newServer(t, newAllocator(t, 1, nil), src)
	h := s.Handler()
	first := get(t, h, "/scrape_configs")
	e := s.configs.cur.Load()
	get(t, h, "/scrape_configs")
	require.Same(t, e, s.configs.cur.Load(), "same map, no re-serialization")

	src.set(loadFixture(t, strings.Replace(fixtureYAML, "scrape_interval: 15s", "scrape_interval: 20s", 1)), true)
	second := get(t, h, "/scrape_configs")
	require.NotSame(t, e, s.configs.cur.Load())
	require.Contains(t, second.Body.String(), `"20s"`)
	require.NotEqual(t, first.Header().Get("ETag"), second.Header().Get("ETag"))
}

func TestReadyz(t *testing.T) {
	t.Parallel()
	src := &fakeConfigs{}
	h := newServer(t, newAllocator(t, 1, nil), src).Handler()
	require.Equal(t, http.StatusServiceUnavailable, get(t, h, "/readyz").Code)
	require.Equal(t, http.StatusOK, get(t, h, "/livez").Code, "alive while not ready")
	src.set(map[string]*promconfig.ScrapeConfig{}, true)
	require.Equal(t, http.StatusOK, get(t, h, "/readyz").Code)

	without := newServer(t, newAllocator(t, 1, nil), nil).Handler()
	require.Equal(t, http.StatusOK, get(t, without, "/readyz").Code, "nothing to wait for")
}

func TestScrapeConfigsConcurrentChanges(t *testing.T) {
	t.Parallel()
	sets := []map[string]*promconfig.ScrapeConfig{
		loadFixture(t, fixtureYAML),
		loadFixture(t, strings.Replace(fixtureYAML, "15s", "25s", 1)),
		{},
	}
	src := &fakeConfigs{m: sets[0], ready: true}
	h := newServer(t, newAllocator(t, 1, nil), src).Handler()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				w := get(t, h, "/scrape_configs")
				if w.Code != http.StatusOK || !json.Valid(w.Body.Bytes()) || !strings.HasPrefix(w.Body.String(), "{") {
					t.Errorf("got %d %q", w.Code, w.Body.String())
					return
				}
			}
		})
	}
	for i := range 30 {
		src.set(sets[i%len(sets)], true)
	}
	wg.Wait()
}

// TestLibraryMarshallerCannotReveal pins down why encodeScrapeConfigs is not
// yaml.Marshal plus YAML-to-JSON: Prometheus' own marshallers always write a
// proxy URL's password as "xxxxx", and reveal Secrets only through the
// process-global MarshalSecretValue. If a later prometheus/common lifts
// either, this test fails and the encoder can go.
func TestLibraryMarshallerCannotReveal(t *testing.T) {
	t.Parallel()
	configs := loadFixture(t, fixtureYAML)
	out := string(reference(t, configs))
	require.NotContains(t, out, "proxy-s3cret")
	require.Contains(t, out, "xxxxx", "the library redacts URL passwords unconditionally")
	require.Contains(t, out, `"\u003csecret\u003e"`, "and Secrets unless the process-global switch is set")
}

// BenchmarkScrapeConfigsEncode compares the encoder with the library path
// (yaml.v2 Marshal, then YAML to JSON) on the fixture, redacted.
func BenchmarkScrapeConfigsEncode(b *testing.B) {
	configs := loadFixture(b, fixtureYAML)
	b.Run("encoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeScrapeConfigs(configs, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("yaml-library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			y, err := yaml.Marshal(configs)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := k8syaml.YAMLToJSON(y); err != nil {
				b.Fatal(err)
			}
		}
	})
}
