package manifests_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gotest.tools/v3/golden"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests"
)

// upstreamCollector reads a manifest of testdata/upstream into the
// namespace observability, as kubectl apply -n observability would.
func upstreamCollector(t *testing.T, file string) *v1beta1.OpenTelemetryCollector {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "upstream", file))
	require.NoError(t, err)
	c := decodeCollector(t, string(b))
	c.Namespace = "observability"
	return c
}

func find[T client.Object](objs []client.Object) (T, bool) {
	for _, o := range objs {
		if t, ok := o.(T); ok {
			return t, true
		}
	}
	var zero T
	return zero, false
}

// TestBuildUpstreamModesGolden builds upstream's example manifests of modes
// deployment (the default) and daemonset, with a PodDisruptionBudget and an
// autoscaler, and every pod-level field together.
func TestBuildUpstreamModesGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "upstream", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := manifests.BuildCollector(upstreamCollector(t, filepath.Base(f)), settings, nil)
			require.NoError(t, err)
			golden.Assert(t, render(t, got.Objects), "modes-"+name+".golden.yaml")
		})
	}
}

func TestBuildDeploymentMode(t *testing.T) {
	t.Parallel()
	got, err := manifests.BuildCollector(upstreamCollector(t, "smoke-simplest.yaml"), settings, nil)
	require.NoError(t, err)
	d, ok := find[*appsv1.Deployment](got.Objects)
	require.True(t, ok, "mode absent is deployment")
	require.Equal(t, "simplest-collector", d.Name)
	require.Equal(t, int32(1), *d.Spec.Replicas)
	_, ok = find[*appsv1.StatefulSet](got.Objects)
	require.False(t, ok)
	p, ok := find[*policyv1.PodDisruptionBudget](got.Objects)
	require.True(t, ok)
	require.Equal(t, int32(1), p.Spec.MaxUnavailable.IntVal)
	_, ok = find[*autoscalingv2.HorizontalPodAutoscaler](got.Objects)
	require.False(t, ok, "no autoscaler without spec.autoscaler")
	var names []string
	for _, o := range got.Objects {
		if s, ok := o.(*corev1.Service); ok {
			names = append(names, s.Name)
			require.Nil(t, s.Spec.InternalTrafficPolicy)
			require.False(t, s.Spec.PublishNotReadyAddresses, "only a StatefulSet's governing Service publishes unready pods")
		}
	}
	require.ElementsMatch(t, []string{"simplest-collector", "simplest-collector-headless", "simplest-collector-monitoring"}, names)
}

func TestBuildAutoscaler(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		autoscaler       string
		replicas         int32
		wantMin, wantDep int32
		wantMetrics      []corev1.ResourceName
	}{
		{"cpu by default, min from replicas", "autoscaler:\n    maxReplicas: 4\n  replicas: 2\n", 2, 2, 2, []corev1.ResourceName{corev1.ResourceCPU}},
		{"min above replicas raises the workload", "autoscaler:\n    minReplicas: 3\n    maxReplicas: 4\n  replicas: 1\n", 1, 3, 3, []corev1.ResourceName{corev1.ResourceCPU}},
		{"memory then cpu", "autoscaler:\n    maxReplicas: 4\n    targetCPUUtilization: 50\n    targetMemoryUtilization: 60\n", 1, 1, 1, []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceCPU}},
		{"memory only", "autoscaler:\n    maxReplicas: 4\n    targetMemoryUtilization: 60\n", 1, 1, 1, []corev1.ResourceName{corev1.ResourceMemory}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := upstreamCollector(t, "pdb-default.yaml")
			doc := "spec:\n  " + tc.autoscaler
			var patch v1beta1.OpenTelemetryCollector
			require.NoError(t, yamlUnmarshal(doc, &patch))
			c.Spec.Autoscaler = patch.Spec.Autoscaler
			c.Spec.Replicas = patch.Spec.Replicas
			got, err := manifests.BuildCollector(c, settings, nil)
			require.NoError(t, err)
			hpa, ok := find[*autoscalingv2.HorizontalPodAutoscaler](got.Objects)
			require.True(t, ok)
			require.Equal(t, tc.wantMin, *hpa.Spec.MinReplicas)
			require.Equal(t, int32(4), hpa.Spec.MaxReplicas)
			require.Equal(t, autoscalingv2.CrossVersionObjectReference{APIVersion: "opentelemetry.io/v1beta1", Kind: "OpenTelemetryCollector", Name: "pdb"}, hpa.Spec.ScaleTargetRef)
			var res []corev1.ResourceName
			for _, m := range hpa.Spec.Metrics {
				res = append(res, m.Resource.Name)
			}
			require.Equal(t, tc.wantMetrics, res)
			d, _ := find[*appsv1.Deployment](got.Objects)
			require.Equal(t, tc.wantDep, *d.Spec.Replicas)
		})
	}
}

func TestBuildDaemonSetMode(t *testing.T) {
	t.Parallel()
	c := upstreamCollector(t, "smoke-daemonset.yaml")
	c.Spec.HostNetwork = ptr.To(true)
	got, err := manifests.BuildCollector(c, settings, nil)
	require.NoError(t, err)
	ds, ok := find[*appsv1.DaemonSet](got.Objects)
	require.True(t, ok)
	require.Equal(t, appsv1.RollingUpdateDaemonSetStrategyType, ds.Spec.UpdateStrategy.Type)
	require.True(t, ds.Spec.Template.Spec.HostNetwork)
	require.Equal(t, corev1.DNSClusterFirstWithHostNet, ds.Spec.Template.Spec.DNSPolicy)
	_, ok = find[*policyv1.PodDisruptionBudget](got.Objects)
	require.False(t, ok, "a DaemonSet has no disruption budget")
	for _, o := range got.Objects {
		if s, ok := o.(*corev1.Service); ok && s.Name != manifests.MonitoringService(c.Name) {
			require.Equal(t, corev1.ServiceInternalTrafficPolicyLocal, *s.Spec.InternalTrafficPolicy, s.Name)
		}
	}
}

func TestBuildSidecarMode(t *testing.T) {
	t.Parallel()
	c := upstreamCollector(t, "smoke-simplest.yaml")
	c.Spec.Mode = v1beta1.ModeSidecar
	got, err := manifests.BuildCollector(c, settings, nil)
	require.NoError(t, err)
	require.Empty(t, got.Objects, "the webhook injects the collector; the operator builds nothing")
	require.Equal(t, map[string]string{manifests.LabelSidecarInjected: "observability.simplest"}, got.Selector)
}

// TestUserPortsMerge checks upstream's merge of spec.ports with the inferred
// ports: the user's first, an inferred port on the same number dropped, one
// whose name the user took renamed.
func TestUserPortsMerge(t *testing.T) {
	t.Parallel()
	c := upstreamCollector(t, "smoke-simplest.yaml")
	var patch v1beta1.OpenTelemetryCollector
	require.NoError(t, yamlUnmarshal("spec:\n  ports:\n  - name: jaeger-grpc\n    port: 9999\n    hostPort: 9999\n  - name: mine\n    port: 4318\n", &patch))
	c.Spec.Ports = patch.Spec.Ports
	got, err := manifests.BuildCollector(c, settings, nil)
	require.NoError(t, err)
	var base *corev1.Service
	for _, o := range got.Objects {
		if s, ok := o.(*corev1.Service); ok && s.Name == manifests.CollectorService(c.Name) {
			base = s
		}
	}
	require.NotNil(t, base)
	var ports []string
	for _, p := range base.Spec.Ports {
		ports = append(ports, p.Name+":"+itoa(p.Port))
	}
	require.Equal(t, []string{"jaeger-grpc:9999", "mine:4318", "otlp-grpc:4317", "port-14250:14250"}, ports)
	d, _ := find[*appsv1.Deployment](got.Objects)
	ctrPorts := d.Spec.Template.Spec.Containers[0].Ports
	i := slices.IndexFunc(ctrPorts, func(p corev1.ContainerPort) bool { return p.Name == "jaeger-grpc" })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, int32(9999), ctrPorts[i].HostPort)
}

func yamlUnmarshal(doc string, v any) error { return yaml.UnmarshalStrict([]byte(doc), v) }

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// TestTargetAllocatorServiceAddressing checks that a TargetAllocator's
// ipFamilies, ipFamilyPolicy and trafficDistribution reach its Service, as
// upstream.
func TestTargetAllocatorServiceAddressing(t *testing.T) {
	t.Parallel()
	ta := allocatorFromExample(t, upstreamExample)
	ta.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
	ta.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyPreferDualStack)
	ta.Spec.TrafficDistribution = ptr.To("PreferClose")
	sel := manifests.SelectorLabels(ta.Namespace, ta.Name, manifests.ComponentCollector)
	got, err := manifests.BuildTargetAllocator(manifests.AllocatorInput{TargetAllocator: ta, CollectorSelector: sel}, settings)
	require.NoError(t, err)
	svc, ok := find[*corev1.Service](got.Objects)
	require.True(t, ok)
	require.Equal(t, []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}, svc.Spec.IPFamilies)
	require.Equal(t, corev1.IPFamilyPolicyPreferDualStack, *svc.Spec.IPFamilyPolicy)
	require.Equal(t, "PreferClose", *svc.Spec.TrafficDistribution)
}

// TestPodAnnotations checks the collector pod's annotations against
// upstream's: podAnnotations, then the resource's own annotations, then the
// prometheus.io ones unless disabled, never overriding the user's.
func TestPodAnnotations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		annotations  map[string]string
		podAnnotated map[string]string
		disable      bool
		want         map[string]string
	}{
		{
			name: "defaults",
			want: map[string]string{
				manifests.AnnotationPrometheusScrape: "true", manifests.AnnotationPrometheusPort: "8888",
				manifests.AnnotationPrometheusPath: "/metrics", manifests.AnnotationPrometheusAdded: "true",
			},
		},
		{
			name:    "disabled",
			disable: true,
			want:    map[string]string{},
		},
		{
			name:         "resource annotations, podAnnotations win, kubectl's and the conversion stash left out",
			annotations:  map[string]string{"team": "a", "owner": "x", corev1.LastAppliedConfigAnnotation: "{}", v1alpha1.AnnotationV1alpha1Spec: "{}"},
			podAnnotated: map[string]string{"owner": "y"},
			disable:      true,
			want:         map[string]string{"team": "a", "owner": "y"},
		},
		{
			name:         "the user's prometheus.io annotations are kept",
			podAnnotated: map[string]string{manifests.AnnotationPrometheusScrape: "false", manifests.AnnotationPrometheusPort: "9999", manifests.AnnotationPrometheusPath: "/m"},
			want:         map[string]string{manifests.AnnotationPrometheusScrape: "false", manifests.AnnotationPrometheusPort: "9999", manifests.AnnotationPrometheusPath: "/m"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := upstreamCollector(t, "smoke-simplest.yaml")
			c.Annotations = tc.annotations
			c.Spec.PodAnnotations = tc.podAnnotated
			c.Spec.Observability.Metrics.DisablePrometheusAnnotations = tc.disable
			got, err := manifests.BuildCollector(c, settings, nil)
			require.NoError(t, err)
			d, ok := find[*appsv1.Deployment](got.Objects)
			require.True(t, ok)
			annotations := d.Spec.Template.Annotations
			require.Equal(t, got.ConfigHash, annotations[manifests.AnnotationConfigHash])
			delete(annotations, manifests.AnnotationConfigHash)
			require.Equal(t, tc.want, annotations)
		})
	}
}

// TestIngressPorts checks that the Ingress routes to the receiver ports of
// the base Service, the user's included, and not to exporter ports, and
// carries tls and ingressClassName, as upstream.
func TestIngressPorts(t *testing.T) {
	t.Parallel()
	c := upstreamCollector(t, "metrics-servicemonitor.yaml")
	var patch v1beta1.OpenTelemetryCollector
	require.NoError(t, yamlUnmarshal(`spec:
  ports:
  - name: custom
    port: 9999
  ingress:
    type: ingress
    hostname: example.com
    ingressClassName: nginx
    tls:
    - hosts: [example.com]
      secretName: example-tls
`, &patch))
	c.Spec.Ports, c.Spec.Ingress = patch.Spec.Ports, patch.Spec.Ingress
	got, err := manifests.BuildCollector(c, settings, nil)
	require.NoError(t, err)
	ing, ok := find[*networkingv1.Ingress](got.Objects)
	require.True(t, ok)
	require.Equal(t, manifests.IngressName(c.Name), ing.Name)
	require.Equal(t, "nginx", *ing.Spec.IngressClassName)
	require.Equal(t, []networkingv1.IngressTLS{{Hosts: []string{"example.com"}, SecretName: "example-tls"}}, ing.Spec.TLS)
	require.Len(t, ing.Spec.Rules, 1)
	require.Equal(t, "example.com", ing.Spec.Rules[0].Host)
	var paths []string
	for _, p := range ing.Spec.Rules[0].HTTP.Paths {
		require.Equal(t, manifests.CollectorService(c.Name), p.Backend.Service.Name)
		require.Equal(t, "/"+p.Backend.Service.Port.Name, p.Path)
		paths = append(paths, p.Path)
	}
	require.Equal(t, []string{"/custom", "/otlp-grpc", "/otlp-http"}, paths, "receiver ports and the user's; not prometheus-dev or prometheus-prod")
}

// TestDNSPolicy: upstream's precedence, explicit, then nameservers (over the
// host network: the collector copy had them the other way round), then the
// host network; the API server's default otherwise.
func TestDNSPolicy(t *testing.T) {
	t.Parallel()
	dns := &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.10"}}
	explicit := ptr.To(corev1.DNSDefault)
	for _, tc := range []struct {
		name        string
		explicit    *corev1.DNSPolicy
		hostNetwork bool
		cfg         *corev1.PodDNSConfig
		want        corev1.DNSPolicy
	}{
		{"default", nil, false, nil, ""},
		{"host network", nil, true, nil, corev1.DNSClusterFirstWithHostNet},
		{"nameservers", nil, false, dns, corev1.DNSNone},
		{"nameservers over host network", nil, true, dns, corev1.DNSNone},
		{"explicit", explicit, true, dns, corev1.DNSDefault},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, manifests.DNSPolicy(tc.explicit, tc.hostNetwork, tc.cfg))
		})
	}
}
