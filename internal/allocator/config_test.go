package allocator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/discovery/file"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/allocation"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		yaml    string
		errText string
		check   func(t *testing.T, c *config)
	}{
		{
			name: "defaults",
			yaml: "collectors: [{name: a}]\n",
			check: func(t *testing.T, c *config) {
				require.Equal(t, ":8080", c.ListenAddr)
				require.Equal(t, allocation.ConsistentHashing, c.AllocationStrategy)
				require.InDelta(t, allocation.DefaultEpsilon, c.BalanceEpsilon, 0)
				require.Len(t, c.Discovery.Collector.Collectors, 1)
			},
		},
		{name: "weights url not http", yaml: "weights: {query_url: prometheus:9090}\n", errText: "weights.query_url"},
		{name: "negative weights interval", yaml: "weights: {query_url: 'http://p:9090', interval: -1s}\n", errText: "must not be negative"},
		{name: "negative settle", yaml: "handoff: {settle: -1s}\n", errText: "must not be negative"},
		{
			name: "handoff and weights",
			yaml: "handoff: {enabled: false, settle: 3s}\nweights: {query_url: 'http://p:9090', interval: 1m}\n",
			check: func(t *testing.T, c *config) {
				require.False(t, c.Handoff.On())
				require.Equal(t, 3*time.Second, c.Handoff.Settle)
				l, err := c.learner(nil)
				require.NoError(t, err)
				require.NotNil(t, l)
			},
		},
		{
			name: "upstream keys",
			yaml: `
listen_addr: 127.0.0.1:9999
allocation_strategy: per-node
allocation_fallback_strategy: least-weighted
filter_strategy: relabel-config
collector_namespace: observability
collector_selector:
  matchLabels:
    app.kubernetes.io/component: opentelemetry-collector
allow_insecure_auth_secrets: true
config:
  scrape_configs:
    - job_name: a
      static_configs: [{targets: ["x:1"]}]
`,
			check: func(t *testing.T, c *config) {
				require.Equal(t, "127.0.0.1:9999", c.ListenAddr)
				require.Equal(t, allocation.PerNode, c.AllocationStrategy)
				require.Equal(t, allocation.LeastWeighted, c.AllocationFallbackStrategy)
				require.True(t, c.AllowInsecureAuthSecrets)
				require.Equal(t, "observability", c.Discovery.Collector.CollectorNamespace)
				require.Len(t, promConfig(c).ScrapeConfigs, 1)
			},
		},
		{name: "unknown key", yaml: "listen_adr: :1\n", errText: `unknown key "listen_adr"`},
		{name: "wrong type", yaml: "allow_insecure_auth_secrets: maybe\n", errText: "allow_insecure_auth_secrets"},
		{name: "unknown strategy", yaml: "allocation_strategy: random\n", errText: `"random"`},
		{name: "bad scrape config", yaml: "config:\n  scrape_configs:\n    - job_name: a\n      scrape_interval: soon\n", errText: "soon"},
		{name: "https without files", yaml: "https:\n  enabled: true\n", errText: "https.ca_file_path, https.tls_cert_file_path, https.tls_key_file_path"},
		{name: "not yaml", yaml: "{", errText: "parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := parseConfig([]byte(tc.yaml))
			if tc.errText != "" {
				require.ErrorContains(t, err, tc.errText)
				return
			}
			require.NoError(t, err)
			tc.check(t, c)
		})
	}
}

func TestLoadConfigResolvesFileSDAgainstItsDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "ta.yaml")
	require.NoError(t, os.WriteFile(path, []byte("config:\n  scrape_configs:\n    - job_name: f\n      file_sd_configs: [{files: [targets/*.json]}]\n"), 0o600))
	c, err := loadConfig(path, Flags{})
	require.NoError(t, err)
	sd, ok := promConfig(c).ScrapeConfigs[0].ServiceDiscoveryConfigs[0].(*file.SDConfig)
	require.True(t, ok)
	require.Equal(t, []string{filepath.Join(dir, "targets/*.json")}, sd.Files)

	_, err = loadConfig(filepath.Join(dir, "missing.yaml"), Flags{})
	require.ErrorContains(t, err, "missing.yaml")
}

func TestExampleConfigLoads(t *testing.T) {
	t.Parallel()
	c, err := loadConfig(filepath.Join("..", "..", "examples", "allocator.yaml"), Flags{})
	require.NoError(t, err)
	require.Len(t, staticCollectors(c), 3)
	require.Len(t, promConfig(c).ScrapeConfigs, 3)
}

func TestFlagsOverrideTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ta.yaml")
	require.NoError(t, os.WriteFile(path, []byte("listen_addr: :1\ncollectors: [a]\n"), 0o600))
	c, err := loadConfig(path, Flags{ListenAddr: "127.0.0.1:2", KubeConfigPath: "/k", PrometheusCR: true})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:2", c.ListenAddr)
	require.Equal(t, "/k", c.KubeConfigFilePath)
	require.True(t, c.Discovery.PrometheusCR.Enabled)

	_, err = loadConfig(path, Flags{HTTPSEnabled: true, HTTPSCAFile: "ca.pem"})
	require.ErrorContains(t, err, "https.tls_cert_file_path, https.tls_key_file_path not set")
	c, err = loadConfig(path, Flags{HTTPSEnabled: true, HTTPSCAFile: "ca", HTTPSCertFile: "crt", HTTPSKeyFile: "key"})
	require.NoError(t, err)
	require.Equal(t, ":8443", c.HTTPS.ListenAddr)
}

// TestOperatorRenderedConfigLoads feeds the allocator config the operator
// renders (its golden files) through the allocator's own strict parser, so
// the two sides cannot drift apart.
func TestOperatorRenderedConfigLoads(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "manifests", "testdata", "targetallocator-*.golden.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		found := false
		for _, doc := range strings.Split(string(b), "\n---\n") {
			var cm corev1.ConfigMap
			require.NoError(t, sigsyaml.Unmarshal([]byte(doc), &cm), f)
			ta, ok := cm.Data["targetallocator.yaml"]
			if cm.Kind != "ConfigMap" || !ok {
				continue
			}
			found = true
			c, err := parseConfig([]byte(ta))
			require.NoError(t, err, "%s: the allocator refuses what the operator renders", f)
			require.NotEmpty(t, c.Discovery.Collector.CollectorNamespace, f)
			require.NotNil(t, c.Discovery.Collector.CollectorSelector, f)
		}
		require.True(t, found, "%s has no allocator ConfigMap", f)
	}
}
