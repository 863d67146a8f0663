package allocatorconfig

import (
	"reflect"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	const full = `
allocation_strategy: per-node
collector_namespace: otel
collector_selector:
  matchLabels:
    app: collector
collector_not_ready_grace_period: 45s
filter_strategy: relabel-config
prometheus_cr:
  enabled: true
  scrape_interval: 15s
  service_monitor_selector: {}
  pod_monitor_selector:
    matchlabels:
      team: a
  probe_namespace_selector:
    matchExpressions:
    - {key: env, operator: In, values: [prod]}
  secret_namespaces: [otel]
  scrape_classes:
  - name: default
    default: true
    tlsConfig:
      insecureSkipVerify: true
config:
  global:
    scrape_interval: 20s
  scrape_configs:
  - job_name: "a/b"
    static_configs:
    - targets: ["x:1"]
      labels:
        "utf8.label": v
`
	cfg, err := ParseConfig([]byte(full))
	require.NoError(t, err)
	require.Equal(t, "otel", cfg.Collector.CollectorNamespace)
	require.Equal(t, &metav1.LabelSelector{MatchLabels: map[string]string{"app": "collector"}}, cfg.Collector.CollectorSelector)
	require.Equal(t, 45*time.Second, cfg.Collector.CollectorNotReadyGracePeriod)
	cr := cfg.PrometheusCR
	require.True(t, cr.Enabled)
	require.Equal(t, model.Duration(15*time.Second), cr.ScrapeInterval)
	require.Equal(t, &metav1.LabelSelector{}, cr.ServiceMonitorSelector)
	require.Equal(t, map[string]string{"team": "a"}, cr.PodMonitorSelector.MatchLabels)
	require.Nil(t, cr.ProbeSelector, "a missing resource selector selects nothing")
	require.Equal(t, "env", cr.ProbeNamespaceSelector.MatchExpressions[0].Key)
	require.Nil(t, cr.ServiceMonitorNamespaceSelector, "a missing namespace selector stays nil: the allocator's own namespace")
	require.Equal(t, monitoringv1.EndpointSliceRole, cr.ServiceDiscoveryRole)
	require.Len(t, cr.ScrapeClasses, 1)
	require.True(t, *cr.ScrapeClasses[0].TLSConfig.InsecureSkipVerify)
	require.Equal(t, []string{"otel"}, cr.SecretNamespaces)
	require.Len(t, cfg.PromConfig.ScrapeConfigs, 1)
	sc := cfg.PromConfig.ScrapeConfigs[0]
	require.Equal(t, "a/b", sc.JobName)
	require.Equal(t, model.Duration(20*time.Second), sc.ScrapeInterval, "global defaults apply")
	require.Equal(t, "/metrics", sc.MetricsPath)

	require.Same(t, cfg.PromConfig.Config, cfg.Prometheus())

	def, err := ParseConfig([]byte("collectors: [{name: a}, {name: b, node: n1}]"))
	require.NoError(t, err)
	require.Nil(t, def.Prometheus())
	require.Equal(t, DefaultFilterStrategy, def.FilterStrategy)
	require.Equal(t, DefaultCollectorNotReadyGracePeriod, def.Collector.CollectorNotReadyGracePeriod)
	require.Equal(t, []StaticCollector{{Name: "a"}, {Name: "b", Node: "n1"}}, def.Collector.Collectors)
}

// TestParseTenancy: the multi-tenancy switches are read.
func TestParseTenancy(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(`
prometheus_cr:
  enabled: true
  ignore_namespace_selectors: true
  enforced_namespace_label: namespace
  enforced_sample_limit: 1
  enforced_target_limit: 2
  enforced_label_limit: 3
  enforced_label_name_length_limit: 4
  enforced_label_value_length_limit: 5
  enforced_body_size_limit: 10MiB
  scrape_config_allowed_sds: [static, kubernetes]
`))
	require.NoError(t, err)
	cr := cfg.PrometheusCR
	require.True(t, cr.IgnoreNamespaceSelectors)
	require.Equal(t, "namespace", cr.EnforcedNamespaceLabel)
	require.Equal(t, []uint64{1, 2, 3, 4, 5}, []uint64{*cr.EnforcedSampleLimit, *cr.EnforcedTargetLimit, *cr.EnforcedLabelLimit, *cr.EnforcedLabelNameLengthLimit, *cr.EnforcedLabelValueLengthLimit})
	require.Equal(t, "10MiB", cr.EnforcedBodySizeLimit)
	require.Equal(t, []string{"static", "kubernetes"}, cr.ScrapeConfigAllowedSDs)
}

func TestParseConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
	}{
		{"unknown scrape field", "config:\n  scrape_configs:\n  - job_name: a\n    scrape_intervall: 1s\n", "scrape_intervall"},
		{"bad relabel action", "config:\n  scrape_configs:\n  - job_name: a\n    relabel_configs:\n    - action: explode\n", "explode"},
		{"duplicate job", "config:\n  scrape_configs:\n  - job_name: a\n  - job_name: a\n", `"a"`},
		{"bad filter", "filter_strategy: magic\n", "filter_strategy"},
		{"allow and deny", "prometheus_cr:\n  allow_namespaces: [a]\n  deny_namespaces: [b]\n", "allow_namespaces"},
		{"bad selector", "prometheus_cr:\n  pod_monitor_selector:\n    matchExpressions: [{key: a, operator: Near}]\n", "pod_monitor_selector"},
		{"unknown selector field", "collector_selector:\n  matchLabelz: {a: b}\n", "collector_selector"},
		{"bad role", "prometheus_cr:\n  service_discovery_role: Pods\n", "service_discovery_role"},
		{"duplicate collector", "collectors: [{name: a}, {name: a}]\n", "duplicate"},
		{"unknown sd kind", "prometheus_cr:\n  scrape_config_allowed_sds: [static, gopher]\n", "gopher"},
		{"bad body size", "prometheus_cr:\n  enforced_body_size_limit: 10 megs\n", "enforced_body_size_limit"},
		{"misspelt tenancy key", "prometheus_cr:\n  ignore_namespace_selector: true\n", "ignore_namespace_selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig([]byte(tc.in))
			require.ErrorIs(t, err, ErrConfig)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestLoadWithLegacyGlobal: prometheus-operator switches the global
// label-name validation to legacy in its init (discovery/operator links it,
// and has the same check with it linked in); loading must still accept UTF-8
// label names. Not parallel: it writes the global.
func TestLoadWithLegacyGlobal(t *testing.T) {
	model.NameValidationScheme = model.LegacyValidation //nolint:staticcheck // the pitfall under test
	cfg, err := LoadPromConfig([]byte(`
scrape_configs:
- job_name: utf8
  static_configs: [{targets: ["a:1"], labels: {"service.name": "x"}}]
  relabel_configs:
  - {target_label: "k8s.namespace", replacement: "ns"}
`))
	require.NoError(t, err)
	require.Equal(t, "utf8", cfg.ScrapeConfigs[0].JobName)
	require.Equal(t, model.UTF8Validation, model.NameValidationScheme) //nolint:staticcheck // see above
}

// TestKeysFromTags: the known keys come from the field tags (no list kept by
// hand), and an unknown key of prometheus_cr is an error naming its path.
func TestKeysFromTags(t *testing.T) {
	t.Parallel()
	require.ElementsMatch(t, []string{
		"config", "filter_strategy", "prometheus_cr", "collector_namespace",
		"collector_not_ready_grace_period", "collectors", "collector_selector",
	}, Keys())
	crKeys := YAMLKeys(reflect.TypeFor[PrometheusCRConfig]())
	for _, k := range []string{"enabled", "service_monitor_selector", "scrape_classes", "crd_poll_interval", "deny_fs_access_through_sms"} {
		require.Contains(t, crKeys, k)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"prometheus_cr:\n  enabled: true\n  servicemonitor_selector: {}\n", `prometheus_cr: unknown key "servicemonitor_selector"`},
		{"prometheus_cr: [enabled]\n", "prometheus_cr: want a mapping"},
	} {
		_, err := ParseConfig([]byte(tc.yaml))
		require.ErrorIs(t, err, ErrConfig)
		require.ErrorContains(t, err, tc.want)
	}
}
