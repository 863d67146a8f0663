package allocator

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

// fakeEnv is an environment of the given variables and namespace file.
func fakeEnv(t *testing.T, namespaceFile string, kv ...string) environment {
	t.Helper()
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return environment{
		lookup:        func(k string) (string, bool) { v, ok := m[k]; return v, ok },
		namespaceFile: namespaceFile,
	}
}

// upstreamEnv is the environment the OpenTelemetry Operator v0.158 gives its
// allocator: OTELCOL_NAMESPACE from the downward API.
func upstreamEnv(t *testing.T) environment {
	return fakeEnv(t, "", "OTELCOL_NAMESPACE", "observability")
}

var operatorSelector = map[string]string{
	"app.kubernetes.io/component":  "opentelemetry-collector",
	"app.kubernetes.io/instance":   "default.my-instance",
	"app.kubernetes.io/managed-by": "opentelemetry-operator",
	"app.kubernetes.io/part-of":    "opentelemetry",
}

// TestUpstreamConfigsLoad loads every targetallocator.yaml the upstream
// operator's own manifest tests render (and the upstream allocator's own
// test inputs), in the environment the upstream operator sets, and checks
// each key's meaning.
func TestUpstreamConfigsLoad(t *testing.T) {
	t.Parallel()
	release := &metav1.LabelSelector{MatchLabels: map[string]string{"release": "my-instance"}, MatchExpressions: []metav1.LabelSelectorRequirement{}}
	collectorJob := func(t *testing.T, c *config) {
		t.Helper()
		pc := promConfig(c)
		require.NotNil(t, pc)
		require.Len(t, pc.ScrapeConfigs, 1)
		sc := pc.ScrapeConfigs[0]
		require.Equal(t, "otel-collector", sc.JobName)
		require.Equal(t, model.Duration(10*time.Second), sc.ScrapeInterval)
	}
	operatorCollector := func(t *testing.T, c *config) {
		t.Helper()
		cc := c.Discovery.Collector
		require.Equal(t, "observability", cc.CollectorNamespace, "OTELCOL_NAMESPACE")
		require.NotNil(t, cc.CollectorSelector)
		require.Equal(t, operatorSelector, cc.CollectorSelector.MatchLabels)
		require.True(t, usesPods(c))
		require.Equal(t, allocation.ConsistentHashing, c.AllocationStrategy)
		require.Equal(t, allocatorconfig.FilterRelabelConfig, c.Discovery.FilterStrategy)
		_, err := allocation.New(c.allocationOptions())
		require.NoError(t, err)
	}
	crDefaults := func(t *testing.T, cr allocatorconfig.PrometheusCRConfig) {
		t.Helper()
		require.True(t, cr.Enabled)
		require.Equal(t, allocatorconfig.DefaultCRScrapeInterval, cr.ScrapeInterval)
	}
	for _, tc := range []struct {
		file  string
		check func(t *testing.T, c *config)
	}{
		{"operator-01-collector.yaml", func(t *testing.T, c *config) {
			operatorCollector(t, c)
			collectorJob(t, c)
			require.False(t, c.Discovery.PrometheusCR.Enabled)
			require.False(t, c.HTTPS.Enabled)
		}},
		{"operator-02-without-collector.yaml", func(t *testing.T, c *config) {
			cc := c.Discovery.Collector
			require.Equal(t, "observability", cc.CollectorNamespace)
			require.Nil(t, cc.CollectorSelector, "every pod of the namespace")
			require.True(t, usesPods(c))
			require.Nil(t, promConfig(c))
		}},
		{"operator-03-without-scrape-configs.yaml", func(t *testing.T, c *config) {
			operatorCollector(t, c)
			require.Nil(t, promConfig(c))
		}},
		{"operator-04-label-selectors.yaml", func(t *testing.T, c *config) {
			operatorCollector(t, c)
			collectorJob(t, c)
			pc := promConfig(c)
			require.Equal(t, model.Duration(30*time.Second), pc.GlobalConfig.ScrapeInterval)
			require.Len(t, pc.GlobalConfig.ScrapeProtocols, 4)
			cr := c.Discovery.PrometheusCR
			crDefaults(t, cr)
			for _, sel := range []*metav1.LabelSelector{cr.ServiceMonitorSelector, cr.PodMonitorSelector, cr.ProbeSelector, cr.ScrapeConfigSelector} {
				require.Equal(t, release, sel)
			}
			for _, sel := range []*metav1.LabelSelector{cr.ServiceMonitorNamespaceSelector, cr.PodMonitorNamespaceSelector, cr.ProbeNamespaceSelector, cr.ScrapeConfigNamespaceSelector} {
				require.Nil(t, sel, "null namespace selector: the allocator's own namespace, as prometheus-operator (the upstream allocator reads every namespace)")
			}
		}},
		{"operator-05-namespace-label-selectors.yaml", func(t *testing.T, c *config) {
			operatorCollector(t, c)
			cr := c.Discovery.PrometheusCR
			crDefaults(t, cr)
			for _, sel := range []*metav1.LabelSelector{cr.ServiceMonitorNamespaceSelector, cr.PodMonitorNamespaceSelector, cr.ProbeNamespaceSelector, cr.ScrapeConfigNamespaceSelector} {
				require.Equal(t, release, sel)
			}
			for _, sel := range []*metav1.LabelSelector{cr.ServiceMonitorSelector, cr.PodMonitorSelector, cr.ProbeSelector, cr.ScrapeConfigSelector} {
				require.Nil(t, sel, "null resource selector: selects nothing")
			}
		}},
		{"operator-06-intervals-and-protocols.yaml", func(t *testing.T, c *config) {
			operatorCollector(t, c)
			cr := c.Discovery.PrometheusCR
			require.True(t, cr.Enabled)
			require.Equal(t, model.Duration(30*time.Second), cr.ScrapeInterval)
			require.Equal(t, model.Duration(30*time.Second), cr.EvaluationInterval)
			require.Equal(t, []monitoringv1.ScrapeProtocol{"PrometheusText1.0.0"}, cr.ScrapeProtocols)
		}},
		{"operator-07-scrape-classes.yaml", func(t *testing.T, c *config) {
			operatorCollector(t, c)
			classes := c.Discovery.PrometheusCR.ScrapeClasses
			require.Len(t, classes, 1)
			require.Equal(t, "my-scrape-class", classes[0].Name)
			require.NotNil(t, classes[0].Default)
			require.True(t, *classes[0].Default)
			require.Len(t, classes[0].Relabelings, 1)
			require.Equal(t, "pod", classes[0].Relabelings[0].Regex)
		}},
		{"operator-08-https.yaml", func(t *testing.T, c *config) {
			operatorCollector(t, c)
			require.Equal(t, allocatorconfig.HTTPS{Enabled: true, ListenAddr: ":8443", CAFilePath: "/tls/ca.crt", TLSCertFilePath: "/tls/tls.crt", TLSKeyFilePath: "/tls/tls.key"}, c.HTTPS)
		}},
		{"operator-09-fallback-strategy.yaml", func(t *testing.T, c *config) {
			operatorCollector(t, c)
			require.Equal(t, allocation.ConsistentHashing, c.AllocationFallbackStrategy)
			a, err := allocation.New(c.allocationOptions())
			require.NoError(t, err)
			require.Empty(t, a.Options().FallbackStrategy, "ignored outside per-node")
		}},
		{"operator-10-not-ready-grace-period.yaml", func(t *testing.T, c *config) {
			operatorCollector(t, c)
			require.Equal(t, 30*time.Second, c.Discovery.Collector.CollectorNotReadyGracePeriod)
		}},
		{"operator-11-allow-insecure-auth-secrets.yaml", func(t *testing.T, c *config) {
			operatorCollector(t, c)
			require.True(t, c.AllowInsecureAuthSecrets)
		}},
		{"operator-12-deny-fs-access-through-sms.yaml", func(t *testing.T, c *config) {
			operatorCollector(t, c)
			require.True(t, c.Discovery.PrometheusCR.DenyFSAccessThroughSMs)
			require.True(t, c.Discovery.PrometheusCR.Enabled)
		}},
		{"allocator-scrape-class-test.yaml", func(t *testing.T, c *config) {
			require.Equal(t, "default", c.Discovery.Collector.CollectorNamespace, "the file wins over OTELCOL_NAMESPACE")
			classes := c.Discovery.PrometheusCR.ScrapeClasses
			require.Len(t, classes, 1)
			require.NotNil(t, classes[0].TLSConfig)
			require.Equal(t, "/etc/ca-bundle.pem", classes[0].TLSConfig.CAFile)
			require.True(t, *classes[0].TLSConfig.InsecureSkipVerify)
		}},
		{"allocator-pod-service-selector-camelcase-expressions-test.yaml", func(t *testing.T, c *config) {
			require.Len(t, c.Discovery.Collector.CollectorSelector.MatchExpressions, 2)
			require.Len(t, c.Discovery.PrometheusCR.ServiceMonitorSelector.MatchExpressions, 1)
			require.Len(t, c.Discovery.PrometheusCR.PodMonitorSelector.MatchExpressions, 1)
		}},
		{"allocator-telemetry.yaml", func(t *testing.T, c *config) {
			require.NotNil(t, c.Telemetry.Metrics)
			readers := c.Telemetry.Metrics.Readers
			require.Len(t, readers, 2)
			require.Equal(t, "example.com:4317", readers[0].Periodic.Exporter.OTLPGrpc.Endpoint)
			require.Equal(t, 60000, readers[0].Periodic.Interval)
			require.Equal(t, "https://ingest.example.com/api/v2/otlp", readers[1].Periodic.Exporter.OTLPHttp.Endpoint)
			require.Len(t, c.notes(), 1, "push export is not done: say so")
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			c, err := loadConfigEnv(filepath.Join("testdata", "upstream", tc.file), Flags{}, upstreamEnv(t))
			require.NoError(t, err)
			tc.check(t, c)
		})
	}
	files, err := filepath.Glob(filepath.Join("testdata", "upstream", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 15, "every golden input has a check above")
}

// TestUpstreamEnvironment checks the environment variables of the upstream
// allocator and the own-namespace fallback of `collector_selector: null`.
func TestUpstreamEnvironment(t *testing.T) {
	t.Parallel()
	nsFile := filepath.Join(t.TempDir(), "namespace")
	require.NoError(t, os.WriteFile(nsFile, []byte("from-sa\n"), 0o600))
	for _, tc := range []struct {
		name    string
		yaml    string
		env     environment
		ns      string
		pods    bool
		insec   bool
		errText string
	}{
		{name: "OTELCOL_NAMESPACE fills collector_namespace", yaml: "collector_selector: {matchlabels: {a: b}}\n", env: fakeEnv(t, "", "OTELCOL_NAMESPACE", "obs"), ns: "obs", pods: true},
		{name: "the file wins", yaml: "collector_namespace: mine\ncollector_selector: {matchlabels: {a: b}}\n", env: fakeEnv(t, "", "OTELCOL_NAMESPACE", "obs"), ns: "mine", pods: true},
		{name: "null selector, OTELCOL_NAMESPACE", yaml: "collector_selector: null\n", env: fakeEnv(t, nsFile, "OTELCOL_NAMESPACE", "obs"), ns: "obs", pods: true},
		{name: "null selector, POD_NAMESPACE", yaml: "collector_selector: null\n", env: fakeEnv(t, nsFile, "POD_NAMESPACE", "pod-ns"), ns: "pod-ns", pods: true},
		{name: "null selector, service account file", yaml: "collector_selector:\n", env: fakeEnv(t, nsFile), ns: "from-sa", pods: true},
		{name: "null selector, no namespace anywhere", yaml: "collector_selector: null\n", env: fakeEnv(t, ""), errText: "collector_selector is null"},
		{name: "static list wins over a null selector", yaml: "collector_selector: null\ncollectors: [a]\n", env: fakeEnv(t, ""), pods: false},
		{name: "no collector keys, no environment", yaml: "collectors: [a]\n", env: fakeEnv(t, nsFile), pods: false},
		{name: "ALLOW_INSECURE_AUTH_SECRETS", yaml: "collectors: [a]\n", env: fakeEnv(t, "", "ALLOW_INSECURE_AUTH_SECRETS", "true"), insec: true},
		{name: "ALLOW_INSECURE_AUTH_SECRETS not true", yaml: "collectors: [a]\n", env: fakeEnv(t, "", "ALLOW_INSECURE_AUTH_SECRETS", "yes")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "targetallocator.yaml")
			require.NoError(t, os.WriteFile(path, []byte(tc.yaml), 0o600))
			c, err := loadConfigEnv(path, Flags{}, tc.env)
			if tc.errText != "" {
				require.ErrorContains(t, err, tc.errText)
				return
			}
			require.NoError(t, err)
			if tc.pods {
				require.Equal(t, tc.ns, c.Discovery.Collector.CollectorNamespace)
			}
			require.Equal(t, tc.pods, usesPods(c))
			require.Equal(t, tc.insec, c.AllowInsecureAuthSecrets)
		})
	}
}

// TestTyposAreRefused: keys upstream does not write are still errors naming
// the key, at the top level and inside prometheus_cr, https and telemetry.
func TestTyposAreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, errText string }{
		{"colector_namespace: x\n", `unknown key "colector_namespace"`},
		{"prometheus_cr:\n  enabled: true\n  servicemonitor_selector: {}\n", `prometheus_cr: unknown key "servicemonitor_selector"`},
		{"prometheus_cr:\n  scrape_intervall: 30s\n", `"scrape_intervall"`},
		{"prometheus_cr: [enabled]\n", "prometheus_cr: want a mapping"},
		{"https:\n  enable: true\n", "enable"},
		{"telemetry:\n  metric: {}\n", "metric"},
		{"telemetry:\n  metrics:\n    readers:\n    - periodic:\n        exporter: {}\n", "must configure otlp_grpc or otlp_http"},
		{"telemetry:\n  metrics:\n    readers:\n    - periodic:\n        exporter: {otlp_grpc: {endpoint: x, temporality_preference: gauge}}\n", "temporality_preference"},
		{"telemetry:\n  metrics:\n    readers:\n    - periodic:\n        exporter: {otlp_http: {}}\n", "endpoint must be set"},
		{"allocation_fallback_strategy: consistent-hash\n", `"consistent-hash"`},
		{"response_cache_bytes: -1\n", "response_cache_bytes"},
	} {
		t.Run(tc.errText, func(t *testing.T) {
			t.Parallel()
			_, err := parseConfig([]byte(tc.yaml))
			require.ErrorContains(t, err, tc.errText)
		})
	}
}

// TestOperatorNamespace: the namespace a null namespace selector selects is
// the allocator's own, from its environment, before the collector namespace.
func TestOperatorNamespace(t *testing.T) {
	t.Parallel()
	nsFile := filepath.Join(t.TempDir(), "namespace")
	require.NoError(t, os.WriteFile(nsFile, []byte("from-file\n"), 0o600))
	for _, tc := range []struct {
		name      string
		env       environment
		collector string
		want      string
	}{
		{"OTELCOL_NAMESPACE", fakeEnv(t, nsFile, "OTELCOL_NAMESPACE", "otelcol", "POD_NAMESPACE", "pod"), "collectors", "otelcol"},
		{"POD_NAMESPACE", fakeEnv(t, nsFile, "POD_NAMESPACE", "pod"), "collectors", "pod"},
		{"service account file", fakeEnv(t, nsFile), "collectors", "from-file"},
		{"outside a pod: collector namespace", fakeEnv(t, ""), "collectors", "collectors"},
		{"nothing known", fakeEnv(t, ""), "", "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &config{}
			c.Discovery.Collector.CollectorNamespace = tc.collector
			require.Equal(t, tc.want, operatorNamespace(c, tc.env))
		})
	}
}
