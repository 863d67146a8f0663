package manifests_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gotest.tools/v3/golden"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
	"github.com/shardwise/shardwise/internal/manifests"
)

var settings = manifests.Settings{
	CollectorImage:       "otel/opentelemetry-collector-contrib:0.165.0",
	TargetAllocatorImage: "ghcr.io/shardwise/allocator:dev",
	OperatorNamespace:    "shardwise-system",
}

// upstreamExample is the OpenTelemetry Operator's README example of a
// collector with a target allocator, with the fields the API server defaults
// written out, since these tests run without one.
const upstreamExample = `
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata:
  name: collector-with-ta
  namespace: observability
spec:
  mode: statefulset
  targetAllocator:
    enabled: true
    allocationStrategy: consistent-hashing
    filterStrategy: relabel-config
  config:
    receivers:
      prometheus:
        config:
          scrape_configs:
          - job_name: 'otel-collector'
            scrape_interval: 10s
            static_configs:
            - targets: [ '0.0.0.0:8888' ]
            metric_relabel_configs:
            - action: labeldrop
              regex: (id|name)
              replacement: $$1
    exporters:
      debug: {}
    service:
      pipelines:
        metrics:
          receivers: [prometheus]
          exporters: [debug]
`

func decodeCollector(t *testing.T, doc string) *v1beta1.OpenTelemetryCollector {
	t.Helper()
	var c v1beta1.OpenTelemetryCollector
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &c))
	return &c
}

func render(t *testing.T, objs []client.Object) string {
	t.Helper()
	var b strings.Builder
	for i, o := range objs {
		if i > 0 {
			b.WriteString("---\n")
		}
		// Status is not desired state: leave it out of the golden files.
		y, err := yaml.Marshal(o)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, yaml.Unmarshal(y, &m))
		delete(m, "status")
		y, err = yaml.Marshal(m)
		require.NoError(t, err)
		b.Write(y)
	}
	return b.String()
}

func TestBuildCollectorGolden(t *testing.T) {
	t.Parallel()
	otlp := strings.Replace(upstreamExample, "    exporters:\n      debug: {}", `      otlp:
        protocols:
          grpc: {}
          http:
            endpoint: 0.0.0.0:4319
      zipkin: {}
      unused:
        endpoint: 0.0.0.0:9999
    exporters:
      debug: {}`, 1)
	otlp = strings.Replace(otlp, "receivers: [prometheus]", "receivers: [prometheus, otlp, zipkin]", 1)
	disabled := strings.Replace(upstreamExample, "enabled: true", "enabled: false", 1)
	labelled := strings.Replace(upstreamExample, "  namespace: observability\n", "  namespace: observability\n  labels:\n    opentelemetry.io/target-allocator: shared\n", 1)
	tuned := strings.Replace(upstreamExample, "  targetAllocator:\n", `  replicas: 3
  image: example.com/otelcol:1
  serviceAccount: existing
  podManagementPolicy: OrderedReady
  args:
    feature-gates: +foo
  podAnnotations:
    team: a
  env:
  - name: GOMEMLIMIT
    value: 100MiB
  targetAllocator:
    collectorTargetReloadInterval: 15s
`, 1)
	for _, tc := range []struct{ name, doc string }{
		{"upstream-example", upstreamExample},
		{"listening-receivers", otlp},
		{"allocator-disabled", disabled},
		{"existing-allocator", labelled},
		{"tuned", tuned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := manifests.BuildCollector(decodeCollector(t, tc.doc), settings, nil)
			require.NoError(t, err)
			golden.Assert(t, render(t, got.Objects), "collector-"+tc.name+".golden.yaml")
		})
	}
}

func TestBuildCollectorErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, from, to string
		want           error
	}{
		{"no prometheus receiver", "      prometheus:\n", "      prometheus/other:\n", manifests.ErrNoPrometheusReceiver},
		{"scrape_configs not a list", "          scrape_configs:\n", "          scrape_configs: {}\n          ignored:\n", manifests.ErrInvalidConfig},
		{"receiver config not an object", "      prometheus:\n        config:\n", "      prometheus:\n        config: 3\n        ignored:\n", manifests.ErrInvalidConfig},
		{"unknown mode", "mode: statefulset", "mode: lambda", manifests.ErrModeUnsupported},
		{"user port named metrics", "mode: statefulset", "mode: statefulset\n  ports:\n  - name: metrics\n    port: 9000", manifests.ErrInvalidPorts},
		{"user port twice", "mode: statefulset", "mode: statefulset\n  ports:\n  - name: a\n    port: 9000\n  - name: a\n    port: 9001", manifests.ErrInvalidPorts},
		{"health_check path not a path", "    service:\n", "    extensions:\n      health_check:\n        path: x\n    service:\n      extensions: [health_check]\n", manifests.ErrInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := strings.Replace(upstreamExample, tc.from, tc.to, 1)
			require.NotEqual(t, upstreamExample, doc)
			_, err := manifests.BuildCollector(decodeCollector(t, doc), settings, nil)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

// TestConfigHashFollowsConfig checks that a config change renames the
// ConfigMap and changes the pod-template hash, and that an unrelated change
// does not.
func TestConfigHashFollowsConfig(t *testing.T) {
	t.Parallel()
	base, err := manifests.BuildCollector(decodeCollector(t, upstreamExample), settings, nil)
	require.NoError(t, err)
	changed, err := manifests.BuildCollector(decodeCollector(t, strings.Replace(upstreamExample, "10s", "20s", 1)), settings, nil)
	require.NoError(t, err)
	same, err := manifests.BuildCollector(decodeCollector(t, strings.Replace(upstreamExample, "mode: statefulset", "mode: statefulset\n  replicas: 5", 1)), settings, nil)
	require.NoError(t, err)
	require.Equal(t, base.ConfigHash, same.ConfigHash)
	// The scrape configs go to the allocator, not the collector: the interval
	// change is in the TargetAllocator, and the collector config is unchanged.
	require.Equal(t, base.ConfigHash, changed.ConfigHash)
	exporter, err := manifests.BuildCollector(decodeCollector(t, strings.Replace(upstreamExample, "debug: {}", "debug: {verbosity: detailed}", 1)), settings, nil)
	require.NoError(t, err)
	require.NotEqual(t, base.ConfigHash, exporter.ConfigHash)
	require.NotEqual(t, base.Objects[0].GetName(), exporter.Objects[0].GetName())
}

func allocatorFromExample(t *testing.T, doc string) *v1alpha1.TargetAllocator {
	t.Helper()
	c, err := manifests.BuildCollector(decodeCollector(t, doc), settings, nil)
	require.NoError(t, err)
	for _, o := range c.Objects {
		if ta, ok := o.(*v1alpha1.TargetAllocator); ok {
			return ta
		}
	}
	require.FailNow(t, "no TargetAllocator built")
	return nil
}

func TestBuildTargetAllocatorGolden(t *testing.T) {
	t.Parallel()
	promCR := strings.Replace(upstreamExample, "    filterStrategy: relabel-config\n", `    filterStrategy: relabel-config
    allowInsecureAuthSecrets: true
    prometheusCR:
      enabled: true
      allowNamespaces: [observability]
      scrapeInterval: 1m
      serviceMonitorSelector:
        matchLabels:
          team: a
      serviceMonitorNamespaceSelector: {}
      podMonitorSelector: {}
`, 1)
	// An allocator of every namespace's monitors: the multi-tenancy
	// switches default on and a NetworkPolicy admits only its collectors
	// and the operator; explicit limits and SD kinds are rendered.
	tenancy := strings.Replace(upstreamExample, "    filterStrategy: relabel-config\n", `    filterStrategy: relabel-config
    prometheusCR:
      enabled: true
      serviceMonitorSelector: {}
      enforcedSampleLimit: 10000
      enforcedTargetLimit: 100
      enforcedLabelLimit: 64
      enforcedLabelNameLengthLimit: 128
      enforcedLabelValueLengthLimit: 512
      enforcedBodySizeLimit: 10MB
      scrapeConfigAllowedSDs: [static, kubernetes]
`, 1)
	wide := settings
	wide.AllowClusterWideGrants = true
	for _, tc := range []struct {
		name, doc string
		s         manifests.Settings
	}{
		{"upstream-example", upstreamExample, settings},
		{"prometheus-cr", promCR, settings},
		{"tenancy", tenancy, wide},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ta := allocatorFromExample(t, tc.doc)
			sel := manifests.SelectorLabels(ta.Namespace, ta.Name, manifests.ComponentCollector)
			got, err := manifests.BuildTargetAllocator(manifests.AllocatorInput{TargetAllocator: ta, CollectorSelector: sel}, tc.s)
			require.NoError(t, err)
			golden.Assert(t, render(t, append(got.Objects, got.ClusterObjects...)), "targetallocator-"+tc.name+".golden.yaml")
		})
	}
}

// TestAllocatorConfigLoads checks the rendered targetallocator.yaml against
// the allocator's own parser: the keys and the selector are understood, and
// the collector's $$ escapes are undone.
func TestAllocatorConfigLoads(t *testing.T) {
	t.Parallel()
	ta := allocatorFromExample(t, upstreamExample)
	sel := manifests.SelectorLabels(ta.Namespace, ta.Name, manifests.ComponentCollector)
	rendered, err := manifests.RenderAllocatorConfig(ta, sel, nil)
	require.NoError(t, err)
	cfg, err := allocatorconfig.ParseConfig([]byte(rendered))
	require.NoError(t, err)
	require.Equal(t, "observability", cfg.Collector.CollectorNamespace)
	require.Equal(t, sel, cfg.Collector.CollectorSelector.MatchLabels)
	require.Equal(t, allocatorconfig.FilterRelabelConfig, cfg.FilterStrategy)
	require.NotNil(t, cfg.PromConfig)
	require.Contains(t, rendered, "replacement: $1\n")
	require.NotContains(t, rendered, "$$")
}

// TestDenyFSAccessDefault: an allocator that reads monitors of other
// namespaces refuses monitors that read the collectors' files unless its
// spec says otherwise; one that reads only its own namespace allows them,
// as upstream; the rendered key is what the allocator reads.
func TestDenyFSAccessDefault(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	for _, tc := range []struct {
		name  string
		allow []string
		set   *bool
		want  bool
	}{
		{"every namespace", nil, nil, true},
		{"another namespace", []string{"observability", "team-b"}, nil, true},
		{"own namespace only", []string{"observability"}, nil, false},
		{"every namespace, allowed explicitly", nil, &no, false},
		{"own namespace, denied explicitly", []string{"observability"}, &yes, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ta := allocatorFromExample(t, upstreamExample)
			ta.Spec.PrometheusCR.Enabled = true
			ta.Spec.PrometheusCR.AllowNamespaces = tc.allow
			ta.Spec.PrometheusCR.DenyFSAccessThroughSMs = tc.set
			sel := manifests.SelectorLabels(ta.Namespace, ta.Name, manifests.ComponentCollector)
			rendered, err := manifests.RenderAllocatorConfig(ta, sel, nil)
			require.NoError(t, err)
			cfg, err := allocatorconfig.ParseConfig([]byte(rendered))
			require.NoError(t, err)
			require.Equal(t, tc.want, cfg.PrometheusCR.DenyFSAccessThroughSMs)
		})
	}
}

// TestTenancyDefaults: an allocator that reads monitors of other namespaces
// ignores their namespace selectors, enforces the namespace label, allows
// ScrapeConfigs only the static, kubernetes and dns kinds and gets a
// NetworkPolicy unless its spec says otherwise; one that reads only its own
// namespace gets none of them, as upstream; the rendered keys are what the
// allocator reads.
func TestTenancyDefaults(t *testing.T) {
	t.Parallel()
	yes, no, empty, team := true, false, "", "team"
	for _, tc := range []struct {
		name        string
		allow       []string
		ignore, np  *bool
		label       *string
		wantIgnore  bool
		wantLabel   string
		wantNetwork bool
	}{
		{"every namespace", nil, nil, nil, nil, true, "namespace", true},
		{"another namespace", []string{"observability", "team-b"}, nil, nil, nil, true, "namespace", true},
		{"own namespace only", []string{"observability"}, nil, nil, nil, false, "", false},
		{"every namespace, switched off", nil, &no, &no, &empty, false, "", false},
		{"own namespace, switched on", []string{"observability"}, &yes, &yes, &team, true, "team", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ta := allocatorFromExample(t, upstreamExample)
			ta.Spec.PrometheusCR.Enabled = true
			ta.Spec.PrometheusCR.AllowNamespaces = tc.allow
			ta.Spec.PrometheusCR.IgnoreNamespaceSelectors = tc.ignore
			ta.Spec.PrometheusCR.EnforcedNamespaceLabel = tc.label
			if tc.np != nil {
				ta.Spec.NetworkPolicy = &v1beta1.NetworkPolicySpec{Enabled: tc.np}
			}
			sel := manifests.SelectorLabels(ta.Namespace, ta.Name, manifests.ComponentCollector)
			rendered, err := manifests.RenderAllocatorConfig(ta, sel, nil)
			require.NoError(t, err)
			cfg, err := allocatorconfig.ParseConfig([]byte(rendered))
			require.NoError(t, err)
			require.Equal(t, tc.wantIgnore, cfg.PrometheusCR.IgnoreNamespaceSelectors)
			require.Equal(t, tc.wantLabel, cfg.PrometheusCR.EnforcedNamespaceLabel)
			// ScrapeConfigs of other namespaces may not make the allocator
			// fetch a URL or read a file their author names.
			if manifests.DiscoversOtherNamespaces(ta.Spec.PrometheusCR, ta.Namespace) {
				require.Equal(t, []string{"static", "kubernetes", "dns"}, cfg.PrometheusCR.ScrapeConfigAllowedSDs)
			} else {
				require.Empty(t, cfg.PrometheusCR.ScrapeConfigAllowedSDs, "every kind, as upstream")
			}

			wide := settings
			wide.AllowClusterWideGrants = true
			got, err := manifests.BuildTargetAllocator(manifests.AllocatorInput{TargetAllocator: ta, CollectorSelector: sel}, wide)
			require.NoError(t, err)
			var np *networkingv1.NetworkPolicy
			for _, o := range got.Objects {
				if p, ok := o.(*networkingv1.NetworkPolicy); ok {
					np = p
				}
			}
			require.Equal(t, tc.wantNetwork, np != nil, "NetworkPolicy")
		})
	}
}
