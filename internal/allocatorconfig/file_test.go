package allocatorconfig_test

import (
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	commonconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

// TestFileRoundTrip: what Marshal writes, Parse reads back as the same File,
// every key set (the one type is both what the operator renders and what
// the allocator reads).
func TestFileRoundTrip(t *testing.T) {
	t.Parallel()
	client := commonconfig.DefaultHTTPClientConfig
	client.Authorization = &commonconfig.Authorization{Type: "Bearer", CredentialsFile: "/var/run/token"}
	client.HTTPHeaders = &commonconfig.Headers{Headers: map[string]commonconfig.Header{"X-Scope-OrgID": {Values: []string{"team-a"}}}}
	client.FollowRedirects = false
	want := allocatorconfig.File{
		Allocator: allocatorconfig.Allocator{
			ListenAddr:                 ":8080",
			AllocationStrategy:         "ordinal",
			AllocationFallbackStrategy: "consistent-hashing",
			AllowInsecureAuthSecrets:   true,
			HTTPS:                      allocatorconfig.HTTPS{Enabled: true, ListenAddr: ":8443", CAFilePath: "/tls/ca.crt", TLSCertFilePath: "/tls/tls.crt", TLSKeyFilePath: "/tls/tls.key", PlainHTTPAPI: true},
			KubeConfigFilePath:         "/kube/config",
			BalanceEpsilon:             0.1,
			EnablePprof:                true,
			ResponseCacheBytes:         1 << 20,
			Handoff:                    allocatorconfig.Handoff{Enabled: ptr.To(false), Settle: 15 * time.Second, MaxOverlap: time.Minute},
			Weights:                    allocatorconfig.Weights{QueryURL: "http://prometheus:9090", Query: "up", Interval: time.Minute, MaxChange: 0.25, HTTPClientConfig: client},
		},
		Discovery: allocatorconfig.Config{
			PromConfig:     allocatorconfig.ScrapeConfigs([]map[string]any{{"job_name": "a", "static_configs": []any{map[string]any{"targets": []any{"x:1"}}}}}),
			FilterStrategy: allocatorconfig.FilterNone,
			PrometheusCR: allocatorconfig.PrometheusCRConfig{
				Enabled:                         true,
				DenyNamespaces:                  []string{"kube-system"},
				SecretNamespaces:                []string{"observability"},
				ServiceMonitorSelector:          &metav1.LabelSelector{},
				ServiceMonitorNamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
				PodMonitorSelector:              &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}},
				ScrapeInterval:                  model.Duration(time.Minute),
				EvaluationInterval:              model.Duration(2 * time.Minute),
				ScrapeProtocols:                 []monitoringv1.ScrapeProtocol{"PrometheusText0.0.4"},
				ScrapeClasses:                   []monitoringv1.ScrapeClass{{Name: "default", Default: ptr.To(true)}},
				ServiceDiscoveryRole:            monitoringv1.EndpointsRole,
				CRDPollInterval:                 time.Minute,
				DenyFSAccessThroughSMs:          true,
				IgnoreNamespaceSelectors:        true,
				EnforcedNamespaceLabel:          "namespace",
				EnforcedSampleLimit:             ptr.To[uint64](1000),
				EnforcedTargetLimit:             ptr.To[uint64](10),
				EnforcedLabelLimit:              ptr.To[uint64](50),
				EnforcedLabelNameLengthLimit:    ptr.To[uint64](100),
				EnforcedLabelValueLengthLimit:   ptr.To[uint64](200),
				EnforcedBodySizeLimit:           "10MB",
				ScrapeConfigAllowedSDs:          []string{"static", "kubernetes"},
			},
			Collector: allocatorconfig.CollectorConfig{
				CollectorNamespace:           "observability",
				CollectorSelector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "collector"}},
				CollectorNotReadyGracePeriod: 45 * time.Second,
			},
		},
	}
	b, err := want.Marshal()
	require.NoError(t, err)
	got, err := allocatorconfig.Parse(b)
	require.NoError(t, err, "%s", b)

	// The parsed Prometheus config is what was written, defaults filled in.
	require.Len(t, got.Discovery.PromConfig.ScrapeConfigs, 1)
	require.Equal(t, "a", got.Discovery.PromConfig.ScrapeConfigs[0].JobName)
	again, err := got.Marshal()
	require.NoError(t, err)
	require.Equal(t, string(b), string(again), "marshal, parse, marshal")
	got.Discovery.PromConfig, want.Discovery.PromConfig = nil, nil
	require.Equal(t, want, *got)

	// A zero client config, as the operator fills it in, writes no client
	// keys and reads back as Prometheus' defaults.
	bare := allocatorconfig.File{Allocator: allocatorconfig.Allocator{Weights: allocatorconfig.Weights{QueryURL: "http://p:9090"}}}
	b, err = bare.Marshal()
	require.NoError(t, err)
	require.Equal(t, "weights:\n  query_url: http://p:9090\n", string(b))
	got, err = allocatorconfig.Parse(b)
	require.NoError(t, err)
	require.Equal(t, commonconfig.DefaultHTTPClientConfig, got.Weights.HTTPClientConfig)

	// A static collector list, and an unknown key refused by name.
	static := allocatorconfig.File{Discovery: allocatorconfig.Config{Collector: allocatorconfig.CollectorConfig{
		Collectors: []allocatorconfig.StaticCollector{{Name: "c-0"}, {Name: "c-1", Node: "n"}},
	}}}
	b, err = static.Marshal()
	require.NoError(t, err)
	got, err = allocatorconfig.Parse(b)
	require.NoError(t, err, "%s", b)
	require.Equal(t, static.Discovery.Collector.Collectors, got.Discovery.Collector.Collectors)
	_, err = allocatorconfig.Parse(append(b, "listen_port: :1\n"...))
	require.ErrorContains(t, err, `unknown key "listen_port"`)
	_, err = allocatorconfig.Parse([]byte("handoff: {settle: soon}\n"))
	require.ErrorContains(t, err, "handoff")
}
