package v1alpha1_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
)

func ptrOf[T any](t *rapid.T, label string, g *rapid.Generator[T]) *T {
	if !rapid.Bool().Draw(t, label+"?") {
		return nil
	}
	v := g.Draw(t, label)
	return &v
}

func labels(t *rapid.T, label string) map[string]string {
	return rapid.MapOfN(rapid.SampledFrom([]string{"a", "b", "app.kubernetes.io/name"}), rapid.StringMatching(`[a-z0-9]{0,5}`), 0, 3).Draw(t, label)
}

// alphaConfig draws a v1alpha1 config string, with the comments, key order,
// quoting and number spellings a YAML file may have.
func alphaConfig(t *rapid.T) string {
	if rapid.Bool().Draw(t, "noConfig") {
		return ""
	}
	interval := rapid.SampledFrom([]string{"30s", "1m"}).Draw(t, "interval")
	limit := rapid.SampledFrom([]string{"400", "4e2", "0x190", "400.0"}).Draw(t, "limit")
	comment := rapid.SampledFrom([]string{"", "# receivers first\n", "---\n"}).Draw(t, "comment")
	quote := rapid.SampledFrom([]string{"", `"`, `'`}).Draw(t, "quote")
	return fmt.Sprintf(`%sreceivers:
  prometheus:
    config:
      scrape_configs:
      - job_name: %sself%s
        scrape_interval: %s
        static_configs: [{targets: ["0.0.0.0:8888"]}]
processors:
  memory_limiter: {check_interval: 1s, limit_mib: %s}
exporters:
  debug: {}
service:
  pipelines:
    metrics: {receivers: [prometheus], processors: [memory_limiter], exporters: [debug]}
`, comment, quote, quote, interval, limit)
}

func alphaSpec(t *rapid.T) v1alpha1.OpenTelemetryCollectorSpec {
	i32 := rapid.Int32Range(1, 10)
	s := v1alpha1.OpenTelemetryCollectorSpec{
		Mode:                  rapid.SampledFrom([]v1beta1.Mode{"", v1beta1.ModeDeployment, v1beta1.ModeStatefulSet, v1beta1.ModeDaemonSet}).Draw(t, "mode"),
		Config:                alphaConfig(t),
		Replicas:              ptrOf(t, "replicas", i32),
		MinReplicas:           ptrOf(t, "minReplicas", i32),
		MaxReplicas:           ptrOf(t, "maxReplicas", i32),
		HostNetwork:           rapid.Bool().Draw(t, "hostNetwork"),
		ShareProcessNamespace: rapid.Bool().Draw(t, "shareProcessNamespace"),
		PriorityClassName:     rapid.SampledFrom([]string{"", "high"}).Draw(t, "priorityClassName"),
		NodeSelector:          labels(t, "nodeSelector"),
	}
	if rapid.Bool().Draw(t, "autoscaler") {
		s.Autoscaler = &v1beta1.AutoscalerSpec{MinReplicas: ptrOf(t, "autoscaler.min", i32), MaxReplicas: ptrOf(t, "autoscaler.max", i32)}
	}
	if rapid.Bool().Draw(t, "updateStrategy") {
		s.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
	}
	if rapid.Bool().Draw(t, "deploymentUpdateStrategy") {
		s.DeploymentUpdateStrategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	s.TargetAllocator = v1alpha1.OpenTelemetryTargetAllocator{
		Enabled:  rapid.Bool().Draw(t, "ta.enabled"),
		Replicas: ptrOf(t, "ta.replicas", i32),
		PrometheusCR: v1alpha1.OpenTelemetryTargetAllocatorPrometheusCR{
			Enabled:                rapid.Bool().Draw(t, "ta.prometheusCR.enabled"),
			PodMonitorSelector:     labels(t, "ta.podMonitorSelector"),
			ServiceMonitorSelector: labels(t, "ta.serviceMonitorSelector"),
			PrometheusCRTenancy:    tenancy(t),
		},
	}
	return s
}

// tenancy draws the multi-tenancy switches both versions have.
func tenancy(t *rapid.T) v1beta1.PrometheusCRTenancy {
	return v1beta1.PrometheusCRTenancy{
		IgnoreNamespaceSelectors: ptrOf(t, "ta.ignoreNamespaceSelectors", rapid.Bool()),
		EnforcedNamespaceLabel:   ptrOf(t, "ta.enforcedNamespaceLabel", rapid.SampledFrom([]string{"", "namespace", "tenant"})),
		EnforcedSampleLimit:      ptrOf(t, "ta.enforcedSampleLimit", rapid.Int64Range(0, 1e6)),
		EnforcedBodySizeLimit:    ptrOf(t, "ta.enforcedBodySizeLimit", rapid.SampledFrom([]string{"10MB", "1GiB"})),
		ScrapeConfigAllowedSDs:   rapid.SliceOfNDistinct(rapid.SampledFrom([]v1beta1.ScrapeConfigSD{"static", "kubernetes", "http"}), 0, 3, rapid.ID).Draw(t, "ta.scrapeConfigAllowedSDs"),
	}
}

// TestConvertTenancyWithoutStash: the multi-tenancy switches convert field
// to field, not only through the stash annotation.
func TestConvertTenancyWithoutStash(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		in := &v1alpha1.OpenTelemetryCollector{ObjectMeta: meta(t), Spec: alphaSpec(t)}
		hub := &v1beta1.OpenTelemetryCollector{}
		require.NoError(t, in.DeepCopy().ConvertTo(hub))
		requireSameJSON(t, in.Spec.TargetAllocator.PrometheusCR.PrometheusCRTenancy, hub.Spec.TargetAllocator.PrometheusCR.PrometheusCRTenancy)
		delete(hub.Annotations, v1alpha1.AnnotationV1alpha1Spec)
		out := &v1alpha1.OpenTelemetryCollector{}
		require.NoError(t, out.ConvertFrom(hub))
		requireSameJSON(t, in.Spec.TargetAllocator.PrometheusCR.PrometheusCRTenancy, out.Spec.TargetAllocator.PrometheusCR.PrometheusCRTenancy)
	})
}

func selector(t *rapid.T, label string) *metav1.LabelSelector {
	if !rapid.Bool().Draw(t, label+"?") {
		return nil
	}
	s := &metav1.LabelSelector{MatchLabels: labels(t, label)}
	if rapid.Bool().Draw(t, label+".expressions") {
		s.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}
	}
	return s
}

func betaSpec(t *rapid.T) v1beta1.OpenTelemetryCollectorSpec {
	i32 := rapid.Int32Range(1, 10)
	var cfg v1beta1.Config
	require.NoError(t, json.Unmarshal([]byte(rapid.SampledFrom([]string{
		`{"receivers":{"otlp":{"protocols":{"grpc":{}}}},"exporters":{"debug":{}},"service":{"pipelines":{"traces":{"receivers":["otlp"],"exporters":["debug"]}}}}`,
		`{"receivers":{"r":{"n":1e3,"f":1.50}},"exporters":{"e":null},"service":{"extensions":[],"pipelines":{}}}`,
		`{"receivers":{},"exporters":{},"service":{"pipelines":{}}}`,
	}).Draw(t, "config")), &cfg))
	s := v1beta1.OpenTelemetryCollectorSpec{
		Mode:                  rapid.SampledFrom([]v1beta1.Mode{v1beta1.ModeDeployment, v1beta1.ModeStatefulSet}).Draw(t, "mode"),
		Config:                cfg,
		Replicas:              ptrOf(t, "replicas", i32),
		ConfigVersions:        ptrOf(t, "configVersions", i32),
		HostNetwork:           ptrOf(t, "hostNetwork", rapid.Bool()),
		HostPID:               ptrOf(t, "hostPID", rapid.Bool()),
		ShareProcessNamespace: ptrOf(t, "shareProcessNamespace", rapid.Bool()),
		PriorityClassName:     ptrOf(t, "priorityClassName", rapid.SampledFrom([]string{"", "high"})),
		ServiceName:           rapid.SampledFrom([]string{"", "governing"}).Draw(t, "serviceName"),
		Command:               rapid.SliceOfN(rapid.SampledFrom([]string{"/otelcol", "--feature-gates=x"}), 0, 2).Draw(t, "command"),
	}
	if rapid.Bool().Draw(t, "readinessProbe") {
		s.ReadinessProbe = &v1beta1.Probe{PeriodSeconds: ptrOf(t, "readinessProbe.period", i32)}
	}
	if rapid.Bool().Draw(t, "daemonSetUpdateStrategy") {
		s.DaemonSetUpdateStrategy = &appsv1.DaemonSetUpdateStrategy{}
	}
	s.TargetAllocator.Enabled = rapid.Bool().Draw(t, "ta.enabled")
	s.TargetAllocator.PrometheusCR.PodMonitorSelector = selector(t, "ta.podMonitorSelector")
	s.TargetAllocator.PrometheusCR.ServiceMonitorSelector = selector(t, "ta.serviceMonitorSelector")
	s.TargetAllocator.PrometheusCR.ProbeSelector = selector(t, "ta.probeSelector")
	s.TargetAllocator.PrometheusCR.PrometheusCRTenancy = tenancy(t)
	return s
}

func meta(t *rapid.T) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: "c", Namespace: "ns", Annotations: labels(t, "annotations"), Labels: labels(t, "labels")}
}

// TestConvertRoundTripFromV1alpha1 checks that v1alpha1→v1beta1→v1alpha1
// returns the object unchanged, config string bytes included.
func TestConvertRoundTripFromV1alpha1(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		in := &v1alpha1.OpenTelemetryCollector{ObjectMeta: meta(t), Spec: alphaSpec(t)}
		in.Status.Version = rapid.SampledFrom([]string{"", "0.120.0"}).Draw(t, "status.version")
		hub := &v1beta1.OpenTelemetryCollector{}
		require.NoError(t, in.DeepCopy().ConvertTo(hub))
		out := &v1alpha1.OpenTelemetryCollector{}
		require.NoError(t, out.ConvertFrom(hub))
		requireSameJSON(t, in, out)
	})
}

// requireSameJSON compares as the API server does: through JSON, where an
// empty list and an absent one are the same.
func requireSameJSON(t require.TestingT, want, got any) {
	w, err := json.Marshal(want)
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(w), string(g))
}

// TestConvertRoundTripFromV1beta1 checks that v1beta1→v1alpha1→v1beta1
// returns the object unchanged, fields v1alpha1 lacks included.
func TestConvertRoundTripFromV1beta1(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		in := &v1beta1.OpenTelemetryCollector{ObjectMeta: meta(t), Spec: betaSpec(t)}
		alpha := &v1alpha1.OpenTelemetryCollector{}
		require.NoError(t, alpha.ConvertFrom(in.DeepCopy()))
		out := &v1beta1.OpenTelemetryCollector{}
		require.NoError(t, alpha.ConvertTo(out))
		requireSameJSON(t, in, out)
	})
}

// TestConvertKeepsEmptyPipelines is the case rapid found: a config whose
// maps are all empty is not the zero config, so it is written out, and
// pipelines: {} comes back as {}, not null (with empty selectors beside it
// no stash annotation covered the loss).
func TestConvertKeepsEmptyPipelines(t *testing.T) {
	t.Parallel()
	in := &v1beta1.OpenTelemetryCollector{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	require.NoError(t, json.Unmarshal([]byte(`{"mode":"deployment","config":{"receivers":{},"exporters":{},"service":{"pipelines":{}}},"targetAllocator":{"prometheusCR":{"podMonitorSelector":{},"serviceMonitorSelector":{}}}}`), &in.Spec))
	alpha := &v1alpha1.OpenTelemetryCollector{}
	require.NoError(t, alpha.ConvertFrom(in.DeepCopy()))
	out := &v1beta1.OpenTelemetryCollector{}
	require.NoError(t, alpha.ConvertTo(out))
	requireSameJSON(t, in, out)
}

// TestConvertStashYieldsToEdits checks that a stashed original is not
// restored once the object was edited through the other version.
func TestConvertStashYieldsToEdits(t *testing.T) {
	t.Parallel()
	in := &v1alpha1.OpenTelemetryCollector{Spec: v1alpha1.OpenTelemetryCollectorSpec{
		Config:      "# comment\nreceivers: {otlp: {}}\nexporters: {debug: {}}\nservice: {pipelines: {}}\n",
		MaxReplicas: new(int32(5)),
	}}
	hub := &v1beta1.OpenTelemetryCollector{}
	require.NoError(t, in.ConvertTo(hub))
	require.Contains(t, hub.Annotations, v1alpha1.AnnotationV1alpha1Spec, "the comment and the top-level maxReplicas need the stash")
	require.Equal(t, int32(5), *hub.Spec.Autoscaler.MaxReplicas)

	hub.Spec.Autoscaler.MaxReplicas = new(int32(7))
	out := &v1alpha1.OpenTelemetryCollector{}
	require.NoError(t, out.ConvertFrom(hub))
	require.Nil(t, out.Spec.MaxReplicas)
	require.Equal(t, int32(7), *out.Spec.Autoscaler.MaxReplicas)
	require.NotContains(t, out.Spec.Config, "# comment")
	require.Empty(t, out.Annotations, "a field-by-field conversion of a converted object needs no stash")
}

// TestConvertRejectsBadConfig checks that a config string that is not a YAML
// object is an error, not a panic or an empty config.
func TestConvertRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []string{"[1, 2]", "receivers: [", "just text"} {
		t.Run(cfg, func(t *testing.T) {
			t.Parallel()
			in := &v1alpha1.OpenTelemetryCollector{Spec: v1alpha1.OpenTelemetryCollectorSpec{Config: cfg}}
			require.Error(t, in.ConvertTo(&v1beta1.OpenTelemetryCollector{}))
		})
	}
}
