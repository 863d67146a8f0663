package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"gotest.tools/v3/golden"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/instrumentation"
	"github.com/shardwise/shardwise/internal/sidecar"
	"github.com/shardwise/shardwise/internal/testenv"
)

// sidecarImage is the operator's default collector image in these tests.
const sidecarImage = "otel/opentelemetry-collector-contrib:0.165.0"

// sidecarCollector is upstream's e2e sidecar collector
// (tests/e2e-sidecar/smoke-sidecar-other-namespace/00-install.yaml), as it
// applies unchanged, in namespace ns with the given name and mode.
func sidecarCollector(t testing.TB, ns, name string, mode v1beta1.Mode) *v1beta1.OpenTelemetryCollector {
	t.Helper()
	c := &v1beta1.OpenTelemetryCollector{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata:
  name: sidecar-for-my-app
spec:
  mode: sidecar
  config:
    receivers:
      jaeger:
        protocols:
          grpc: {}
    exporters:
      debug: {}
    service:
      pipelines:
        traces:
          receivers: [jaeger]
          exporters: [debug]
`), c))
	c.Namespace, c.Name, c.Spec.Mode = ns, name, mode
	return c
}

// smokeSidecarInstall is upstream's tests/e2e-sidecar/smoke-sidecar/00-install.yaml,
// unchanged.
const smokeSidecarInstall = `apiVersion: v1
kind: ConfigMap
metadata:
  name: example-config
data:
  config.properties: |
    app.theme=dark
    app.locale=en_US
    database.host=db.local
---
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata:
  name: sidecar-for-my-app
spec:
  mode: sidecar
  configmaps:
  - mountpath: /tmp/example-config
    name: example-config
  config:
    receivers:
      jaeger:
        protocols:
          grpc: {}
    processors: {}

    exporters:
      debug: {}

    service:
      pipelines:
        traces:
          receivers: [jaeger]
          exporters: [debug]
`

// sidecarView renders what the sidecar webhook is responsible for in a
// stored pod, with the random UIDs of the owners replaced by placeholders.
func sidecarView(t *testing.T, w workload, pod *corev1.Pod) []byte {
	t.Helper()
	out, err := yaml.Marshal(map[string]any{
		"labels":         pod.Labels,
		"initContainers": pod.Spec.InitContainers,
		"containers":     pod.Spec.Containers,
	})
	require.NoError(t, err)
	s := strings.ReplaceAll(string(out), string(w.rs.UID), "<replicaset-uid>")
	s = strings.ReplaceAll(s, string(w.rs.OwnerReferences[0].UID), "<deployment-uid>")
	return []byte(s)
}

// createCollector creates col and waits until the operator's cache has it,
// so that the webhook sees every collector a test made.
func createCollector(t *testing.T, c client.Client, op *operator, col *v1beta1.OpenTelemetryCollector) {
	t.Helper()
	require.NoError(t, c.Create(t.Context(), col))
	require.Eventually(t, func() bool {
		return op.client.Get(t.Context(), client.ObjectKeyFromObject(col), &v1beta1.OpenTelemetryCollector{}) == nil
	}, 20*time.Second, 50*time.Millisecond)
}

func collectorContainer(pod *corev1.Pod) *corev1.Container {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if cs[i].Name == sidecar.ContainerName {
				return &cs[i]
			}
		}
	}
	return nil
}

// waitForEvent waits for a Warning event with reason on the workload's
// ReplicaSet whose note contains note.
func waitForEvent(t *testing.T, c client.Client, w workload, reason, note string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, e := range eventsFor(t, c, w.ns, "ReplicaSet", w.rs.Name) {
			if e.Reason == reason && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, note) {
				return true
			}
		}
		return false
	}, 20*time.Second, 100*time.Millisecond, "no %s event with %q", reason, note)
}

// TestSidecarWebhook: the API server calls the webhook over TLS for each pod
// created; the sidecar lands as upstream's, or the pod is admitted unchanged
// with an event and a metric.
func TestSidecarWebhook(t *testing.T) {
	cfg := testenv.Require(t, env)
	op := startOperatorWith(t, instrumentation.DefaultSettings(), true)
	defer op.stop(t)
	c := testenv.Client(t, cfg, testScheme(t))
	ctx := t.Context()

	t.Run("group", func(t *testing.T) {
		t.Run("true", func(t *testing.T) {
			t.Parallel()
			w := newWorkload(t, c, "sc-true", nil)
			createCollector(t, c, op, sidecarCollector(t, w.ns, "sidecar-for-my-app", v1beta1.ModeSidecar))
			// A collector of another mode in the namespace does not count.
			createCollector(t, c, op, sidecarCollector(t, w.ns, "gateway", v1beta1.ModeDeployment))
			pod := w.pod("my-app-5d8f9c7b6-abcde", map[string]string{sidecar.Annotation: "true"})
			require.NoError(t, c.Create(ctx, pod))
			// envtest's API server is 1.29 or later: a native sidecar.
			require.Len(t, pod.Spec.InitContainers, 1)
			require.Len(t, pod.Spec.Containers, 1)
			golden.Assert(t, string(sidecarView(t, w, pod)), "sidecar-true.golden.yaml")
		})

		t.Run("name and namespace/name", func(t *testing.T) {
			t.Parallel()
			w := newWorkload(t, c, "sc-named", nil)
			obs := newWorkload(t, c, "sc-observability", nil)
			createCollector(t, c, op, sidecarCollector(t, w.ns, "mine", v1beta1.ModeSidecar))
			createCollector(t, c, op, sidecarCollector(t, w.ns, "second", v1beta1.ModeSidecar))
			shared := sidecarCollector(t, obs.ns, "shared", v1beta1.ModeSidecar)
			shared.Annotations = map[string]string{AllowNamespacesAnnotation: "sc-named"}
			createCollector(t, c, op, shared)
			createCollector(t, c, op, sidecarCollector(t, obs.ns, "private", v1beta1.ModeSidecar))
			// Another namespace's collector that does not list the pod's
			// namespace: the pod is admitted without it, with a Warning.
			refused := w.pod("refused", map[string]string{sidecar.Annotation: "sc-observability/private"})
			require.NoError(t, c.Create(ctx, refused))
			require.Nil(t, collectorContainer(refused))
			require.Empty(t, refused.Labels[sidecar.LabelInjected])
			waitForEvent(t, c, w, "SidecarNotInjected", "cross-namespace reference refused: OpenTelemetryCollector sc-observability/private does not allow pods of namespace sc-named")
			for value, label := range map[string]string{"mine": "sc-named.mine", "sc-observability/shared": "sc-observability.shared"} {
				pod := w.pod("", map[string]string{sidecar.Annotation: value})
				pod.GenerateName = "my-app-"
				require.NoError(t, c.Create(ctx, pod))
				require.Equal(t, label, pod.Labels[sidecar.LabelInjected], value)
				require.NotNil(t, collectorContainer(pod), value)
				// k8s.namespace.name is the pod's namespace, wherever the collector is.
				attrs := collectorContainer(pod).Env[len(collectorContainer(pod).Env)-1]
				require.Equal(t, "OTEL_RESOURCE_ATTRIBUTES", attrs.Name)
				require.Contains(t, attrs.Value, "k8s.namespace.name=sc-named,")
			}
		})

		t.Run("namespace annotation and false", func(t *testing.T) {
			t.Parallel()
			w := newWorkload(t, c, "sc-ns-annotated", map[string]string{sidecar.Annotation: "agent"})
			createCollector(t, c, op, sidecarCollector(t, w.ns, "agent", v1beta1.ModeSidecar))
			plain := w.pod("plain", nil)
			require.NoError(t, c.Create(ctx, plain))
			require.Equal(t, "sc-ns-annotated.agent", plain.Labels[sidecar.LabelInjected])

			// The pod's false overrides the namespace: nothing injected.
			optOut := w.pod("opted-out", map[string]string{sidecar.Annotation: "false"})
			want := optOut.DeepCopy()
			require.NoError(t, c.Create(ctx, optOut))
			require.Empty(t, optOut.Spec.InitContainers)
			require.Len(t, optOut.Spec.Containers, 1)
			require.Equal(t, want.Labels, optOut.Labels)

			// false removes nothing it should not: the user's own
			// otc-container stays, even in a pod carrying the label.
			own := corev1.Container{Name: sidecar.ContainerName, Image: "registry.example/my-collector:1", Args: []string{"--config=/etc/otel.yaml"}}
			mine := w.pod("own-collector", map[string]string{sidecar.Annotation: "false"}, corev1.Container{Name: "myapp", Image: "app:1"}, own)
			mine.Labels[sidecar.LabelInjected] = "somewhere.else"
			require.NoError(t, c.Create(ctx, mine))
			require.Len(t, mine.Spec.Containers, 2)
			require.Equal(t, own.Image, mine.Spec.Containers[1].Image)
			require.Equal(t, own.Args, mine.Spec.Containers[1].Args)
			require.Equal(t, "somewhere.else", mine.Labels[sidecar.LabelInjected])

			// true with the user's own otc-container: kept, not doubled, reported.
			conflict := w.pod("own-collector-true", map[string]string{sidecar.Annotation: "true"}, corev1.Container{Name: "myapp", Image: "app:1"}, own)
			require.NoError(t, c.Create(ctx, conflict))
			require.Len(t, conflict.Spec.Containers, 2)
			require.Empty(t, conflict.Spec.InitContainers)
			waitForEvent(t, c, w, "SidecarNotInjected", "already has a container named otc-container")
		})

		t.Run("upstream smoke-sidecar with configmaps", func(t *testing.T) {
			t.Parallel()
			w := newWorkload(t, c, "sc-smoke", nil)
			// Upstream's manifest, applied unchanged through the API server's
			// schema (unstructured: no client-side decoding to hide a field).
			for _, doc := range strings.Split(smokeSidecarInstall, "\n---\n") {
				u := &unstructured.Unstructured{}
				require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
				u.SetNamespace(w.ns)
				require.NoError(t, c.Create(ctx, u), u.GetKind())
			}
			require.Eventually(t, func() bool {
				return op.client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "sidecar-for-my-app"}, &v1beta1.OpenTelemetryCollector{}) == nil
			}, 20*time.Second, 50*time.Millisecond)

			pod := w.pod("my-deployment-with-sidecar-abcde", map[string]string{sidecar.Annotation: "true"})
			require.NoError(t, c.Create(ctx, pod))
			// Upstream's 01-assert.yaml: a volume and a mount named
			// configmap-example-config, and these variables in this order.
			otc := collectorContainer(pod)
			require.NotNil(t, otc)
			i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "configmap-example-config" })
			require.GreaterOrEqual(t, i, 0, "no volume configmap-example-config")
			require.Equal(t, "example-config", pod.Spec.Volumes[i].ConfigMap.Name)
			require.Contains(t, otc.VolumeMounts, corev1.VolumeMount{Name: "configmap-example-config", MountPath: "/var/conf/tmp/example-config/configmap-example-config"})
			var env []string
			for _, e := range otc.Env {
				env = append(env, e.Name)
			}
			require.Equal(t, []string{"POD_NAME", "GOMEMLIMIT", "GOMAXPROCS", "OTEL_CONFIG", "OTEL_RESOURCE_ATTRIBUTES_POD_NAME", "OTEL_RESOURCE_ATTRIBUTES_POD_UID", "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME", "OTEL_RESOURCE_ATTRIBUTES"}, env)

			// A pod with its own volume of that name: the API server would
			// refuse the pod upstream makes; here it is admitted without
			// the sidecar, and told why.
			clash := w.pod("my-deployment-with-sidecar-clash", map[string]string{sidecar.Annotation: "true"})
			clash.Spec.Volumes = []corev1.Volume{{Name: "configmap-example-config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			require.NoError(t, c.Create(ctx, clash))
			require.Nil(t, collectorContainer(clash))
			require.Len(t, clash.Spec.Volumes, 1)
			require.NotContains(t, clash.Labels, sidecar.LabelInjected)
			waitForEvent(t, c, w, "SidecarNotInjected", `already has a volume named "configmap-example-config"`)
		})

		t.Run("ambiguous", func(t *testing.T) {
			t.Parallel()
			w := newWorkload(t, c, "sc-ambiguous", nil)
			createCollector(t, c, op, sidecarCollector(t, w.ns, "a", v1beta1.ModeSidecar))
			createCollector(t, c, op, sidecarCollector(t, w.ns, "b", v1beta1.ModeSidecar))
			pod := w.pod("my-app-5d8f9c7b6-ambig", map[string]string{sidecar.Annotation: "true"})
			want := pod.DeepCopy()
			require.NoError(t, c.Create(ctx, pod))
			require.Equal(t, want.Spec.Containers[0].Name, pod.Spec.Containers[0].Name)
			require.Len(t, pod.Spec.Containers, 1)
			require.Empty(t, pod.Spec.InitContainers)
			require.NotContains(t, pod.Labels, sidecar.LabelInjected)
			waitForEvent(t, c, w, "SidecarNotInjected", "namespace sc-ambiguous has a, b")
		})

		t.Run("missing and not a sidecar", func(t *testing.T) {
			t.Parallel()
			// One workload each: the events of one owner with one reason
			// form a series that keeps the first note.
			for i, tc := range []struct{ value, note string }{
				{"true", "no OpenTelemetryCollector with mode sidecar in namespace sc-missing-0"},
				{"nope", "OpenTelemetryCollector sc-missing-1/nope: OpenTelemetryCollector not found"},
				{"gateway", `OpenTelemetryCollector sc-missing-2/gateway has mode "deployment"`},
			} {
				w := newWorkload(t, c, fmt.Sprintf("sc-missing-%d", i), nil)
				createCollector(t, c, op, sidecarCollector(t, w.ns, "gateway", v1beta1.ModeDeployment))
				pod := w.pod("my-app-5d8f9c7b6-missing", map[string]string{sidecar.Annotation: tc.value})
				require.NoError(t, c.Create(ctx, pod))
				require.Nil(t, collectorContainer(pod), tc.value)
				require.Len(t, pod.Spec.Containers, 1)
				waitForEvent(t, c, w, "SidecarNotInjected", tc.note)
			}
		})

		t.Run("sidecar and instrumentation", func(t *testing.T) {
			t.Parallel()
			w := newWorkload(t, c, "sc-both", nil)
			createCollector(t, c, op, sidecarCollector(t, w.ns, "agent", v1beta1.ModeSidecar))
			inst := instrumentationIn(w.ns, "default", nil)
			require.NoError(t, c.Create(ctx, inst))
			require.Eventually(t, func() bool {
				return op.client.Get(ctx, client.ObjectKeyFromObject(inst), inst.DeepCopy()) == nil
			}, 20*time.Second, 50*time.Millisecond)
			pod := w.pod("my-app-5d8f9c7b6-both", map[string]string{sidecar.Annotation: "true", instrumentation.InjectAnnotation(instrumentation.Python): "true"})
			require.NoError(t, c.Create(ctx, pod))
			require.NotNil(t, collectorContainer(pod))
			require.Equal(t, "python", pod.Annotations[instrumentation.AnnotationInjected])
			var inits []string
			for _, ic := range pod.Spec.InitContainers {
				inits = append(inits, ic.Name)
			}
			// The sidecar first, then instrumentation, as upstream.
			require.Equal(t, []string{sidecar.ContainerName, "opentelemetry-auto-instrumentation-python"}, inits)
			// The application container is instrumented, not the collector.
			require.Nil(t, collectorContainer(pod).VolumeMounts)
			require.NotEmpty(t, pod.Spec.Containers[0].VolumeMounts)

			// The Instrumentation is missing: the sidecar still lands.
			missing := w.pod("my-app-5d8f9c7b6-noinst", map[string]string{sidecar.Annotation: "true", instrumentation.InjectAnnotation(instrumentation.Java): "nope"})
			require.NoError(t, c.Create(ctx, missing))
			require.NotNil(t, collectorContainer(missing))
			require.Equal(t, "sc-both.agent", missing.Labels[sidecar.LabelInjected])
			require.NotContains(t, missing.Annotations, instrumentation.AnnotationInjected)
			waitForEvent(t, c, w, "InstrumentationNotInjected", "instrumentation sc-both/nope not found")
		})
	})

	require.GreaterOrEqual(t, sidecarInjections(t, op.reg, "injected"), 6.0)
	require.Equal(t, 1.0, sidecarInjections(t, op.reg, "ambiguous"))
	require.Equal(t, 2.0, sidecarInjections(t, op.reg, "not-found"))
	require.Equal(t, 1.0, sidecarInjections(t, op.reg, "not-sidecar"))
	require.Equal(t, 1.0, sidecarInjections(t, op.reg, "name-conflict"))
	require.Equal(t, 1.0, sidecarInjections(t, op.reg, "pod-conflict"))
	require.Equal(t, 2.0, sidecarInjections(t, op.reg, "opted-out"))
	require.Equal(t, 1.0, counterValue(t, op.reg, "shardwise_sidecar_cross_namespace_refused_total", nil))
}

// sidecarInjections is the sidecar counter's value for result.
func sidecarInjections(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	return counterValue(t, reg, "shardwise_sidecar_injections_total", map[string]string{"result": result})
}

// failing stands for an instrumentation mutator that fails outright.
type failing struct{}

func (failing) Name() string { return "instrumentation" }
func (failing) Mutate(_ context.Context, _ *corev1.Namespace, pod *corev1.Pod) ([]Finding, error) {
	pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "HALF", Value: "done"})
	return nil, errors.New("instrumentation exploded")
}

// TestSidecarKeptWhenInstrumentationFails: the real sidecar mutator before an
// instrumentation mutator that fails; the chain drops the failing mutator's
// changes alone, so the sidecar is in the patch and the failure is an
// admission warning (upstream drops the sidecar with it).
func TestSidecarKeptWhenInstrumentationFails(t *testing.T) {
	cfg := testenv.Require(t, env)
	scheme := testScheme(t)
	c := testenv.Client(t, cfg, scheme)
	w := newWorkload(t, c, "sc-chain", nil)
	require.NoError(t, c.Create(t.Context(), sidecarCollector(t, w.ns, "agent", v1beta1.ModeSidecar)))

	reg := prometheus.NewRegistry()
	sm, err := NewSidecarMutator(cfg, c, c, sidecarImage, reg)
	require.NoError(t, err)
	sm.Settings.NativeSidecar = false
	h := NewPodHandler(scheme, c, nil, sm, failing{})
	pod := w.pod("chained", map[string]string{sidecar.Annotation: "true"})
	raw, err := json.Marshal(pod)
	require.NoError(t, err)
	resp := h.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "chain", Operation: admissionv1.Create, Namespace: w.ns,
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: raw},
	}})
	require.True(t, resp.Allowed)
	require.Equal(t, []string{"instrumentation: instrumentation exploded; its changes were dropped, the others kept"}, resp.Warnings)
	ops, err := json.Marshal(resp.Patches)
	require.NoError(t, err)
	p, err := jsonpatch.DecodePatch(ops)
	require.NoError(t, err)
	patched, err := p.Apply(raw)
	require.NoError(t, err)
	var got corev1.Pod
	require.NoError(t, json.Unmarshal(patched, &got))
	require.Len(t, got.Spec.Containers, 2)
	require.Equal(t, sidecar.ContainerName, got.Spec.Containers[1].Name)
	require.Empty(t, got.Spec.Containers[0].Env, "the failing mutator's change is dropped")
	require.Equal(t, "sc-chain.agent", got.Labels[sidecar.LabelInjected])
	require.Equal(t, 1.0, sidecarInjections(t, reg, "injected"))

	// Ambiguity is an admission warning too, and the pod is admitted unchanged.
	require.NoError(t, c.Create(t.Context(), sidecarCollector(t, w.ns, "second", v1beta1.ModeSidecar)))
	resp = h.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "ambiguous", Operation: admissionv1.Create, Namespace: w.ns,
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: raw},
	}})
	require.True(t, resp.Allowed)
	require.Contains(t, strings.Join(resp.Warnings, "\n"), `sidecar.opentelemetry.io/inject="true": no sidecar injected: several OpenTelemetryCollectors with mode sidecar`)
	for _, op := range resp.Patches {
		require.NotContains(t, op.Path, "containers", "no sidecar in an ambiguous case")
	}
	require.Equal(t, 1.0, sidecarInjections(t, reg, "ambiguous"))
}
