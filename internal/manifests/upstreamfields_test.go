package manifests_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests"
)

// TestUpstreamPodAndServiceFields: hostUsers and hostAliases reach the pods
// of every workload mode, sessionAffinity and sessionAffinityConfig the
// three collector Services, as upstream builds them (its
// internal/manifests/collector deployment.go, statefulset.go, daemonset.go,
// service.go). Before, the schema pruned all four silently.
func TestUpstreamPodAndServiceFields(t *testing.T) {
	t.Parallel()
	for _, mode := range []v1beta1.Mode{v1beta1.ModeDeployment, v1beta1.ModeStatefulSet, v1beta1.ModeDaemonSet} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			c := decodeCollector(t, upstreamExample)
			c.Spec.Mode = mode
			c.Spec.TargetAllocator.Enabled = false
			c.Spec.Config = decodeCollector(t, otlpExample).Spec.Config
			c.Spec.HostUsers = ptr.To(false)
			c.Spec.HostAliases = []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"backend.internal"}}}
			c.Spec.SessionAffinity = ptr.To(corev1.ServiceAffinityClientIP)
			c.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(int32(600))}}
			got, err := manifests.BuildCollector(c, settings, nil)
			require.NoError(t, err)
			var pod *corev1.PodSpec
			for _, o := range got.Objects {
				switch w := o.(type) {
				case *appsv1.Deployment:
					pod = &w.Spec.Template.Spec
				case *appsv1.StatefulSet:
					pod = &w.Spec.Template.Spec
				case *appsv1.DaemonSet:
					pod = &w.Spec.Template.Spec
				}
			}
			require.NotNil(t, pod, "a workload in mode %s", mode)
			require.Equal(t, ptr.To(false), pod.HostUsers)
			require.Equal(t, c.Spec.HostAliases, pod.HostAliases)
			services := 0
			for _, o := range got.Objects {
				if svc, ok := o.(*corev1.Service); ok {
					services++
					require.Equal(t, corev1.ServiceAffinityClientIP, svc.Spec.SessionAffinity, svc.Name)
					require.Equal(t, c.Spec.SessionAffinityConfig, svc.Spec.SessionAffinityConfig, svc.Name)
				}
			}
			require.Equal(t, 3, services, "base, headless and monitoring")
		})
	}
	// Unset, nothing is written: the API server's defaults stay (None).
	got, err := manifests.BuildCollector(decodeCollector(t, upstreamExample), settings, nil)
	require.NoError(t, err)
	for _, o := range got.Objects {
		if svc, ok := o.(*corev1.Service); ok {
			require.Empty(t, svc.Spec.SessionAffinity, svc.Name)
		}
	}
}

const otlpExample = `
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata: {name: otlp}
spec:
  config:
    receivers: {otlp: {protocols: {grpc: {}, http: {}}}}
    exporters: {debug: {}}
    service: {pipelines: {traces: {receivers: [otlp], exporters: [debug]}}}
`

// TestAnnotationsFilter: with upstream's --annotations-filter patterns, the
// matching keys of the collector's annotations and of podAnnotations stay
// off its pods, as upstream's manifestutils.PodAnnotations; the others, and
// the prometheus.io ones the operator adds, are there.
func TestAnnotationsFilter(t *testing.T) {
	t.Parallel()
	c := decodeCollector(t, otlpExample)
	c.Namespace = "observability"
	c.Annotations = map[string]string{"team.example.com/filter.out": "x", "owner": "team-a", "kubectl.kubernetes.io/last-applied-configuration": "{}",
		manifests.AnnotationRestartedAt: "2026-12-03T10:00:00Z"}
	c.Spec.PodAnnotations = map[string]string{"sidecar.istio.io/inject": "false", "also.filter.out": "y"}
	for _, tc := range []struct {
		name   string
		filter []*regexp.Regexp
		want   []string
	}{
		{"none", nil, []string{"also.filter.out", manifests.AnnotationRestartedAt, "owner", "sidecar.istio.io/inject", "team.example.com/filter.out"}},
		// A restart asked for on the resource rolls the pods whatever the
		// filters: the OpAMP bridge's restart command relies on it.
		{"filtered", []*regexp.Regexp{regexp.MustCompile(`.*filter\.out`), regexp.MustCompile(`^sidecar\.istio\.io/`), regexp.MustCompile(`^kubectl\.kubernetes\.io/`)}, []string{manifests.AnnotationRestartedAt, "owner"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := settings
			s.AnnotationsFilter = tc.filter
			got, err := manifests.BuildCollector(c, s, nil)
			require.NoError(t, err)
			d, ok := find[*appsv1.Deployment](got.Objects)
			require.True(t, ok)
			var keys []string
			for k := range d.Spec.Template.Annotations {
				if !strings.HasPrefix(k, "prometheus.io/") && !strings.HasPrefix(k, "opentelemetry-operator-config/") && !strings.HasPrefix(k, "operator.opentelemetry.io/") && !strings.HasPrefix(k, "shardwise.io/") {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			require.Equal(t, tc.want, keys)
			require.Equal(t, "true", d.Spec.Template.Annotations["prometheus.io/scrape"])
		})
	}
}

// TestLabelsCopied: a collector's labels reach every object built for it
// and its pods, as upstream's manifestutils.Labels, except those
// --labels-filter matches; the operator's own labels win, but for a name
// the resource sets.
func TestLabelsCopied(t *testing.T) {
	t.Parallel()
	c := decodeCollector(t, otlpExample)
	c.Namespace = "observability"
	c.Labels = map[string]string{
		"team":                        "payments",
		"team.example.com/filter.out": "x",
		manifests.LabelManagedBy:      "someone-else",
		manifests.LabelName:           "my-collector",
	}
	s := settings
	s.LabelsFilter = []*regexp.Regexp{regexp.MustCompile(`filter\.out`)}
	got, err := manifests.BuildCollector(c, s, nil)
	require.NoError(t, err)
	d, ok := find[*appsv1.Deployment](got.Objects)
	require.True(t, ok)
	for what, l := range map[string]map[string]string{"Deployment": d.Labels, "pod template": d.Spec.Template.Labels} {
		require.Equal(t, "payments", l["team"], what)
		require.NotContains(t, l, "team.example.com/filter.out", what)
		require.Equal(t, manifests.ManagedBy, l[manifests.LabelManagedBy], "%s: the operator's label wins", what)
		require.Equal(t, "my-collector", l[manifests.LabelName], "%s: the resource's name is kept", what)
	}
	require.Equal(t, manifests.SelectorLabels(c.Namespace, c.Name, manifests.ComponentCollector), d.Spec.Selector.MatchLabels, "the selector is the operator's alone")
	for _, o := range got.Objects {
		require.Equal(t, "payments", o.GetLabels()["team"], "%T %s", o, o.GetName())
	}
}
