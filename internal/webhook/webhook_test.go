package webhook

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"gotest.tools/v3/golden"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/instrumentation"
	"github.com/shardwise/shardwise/internal/testenv"
)

func testScheme(t testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, v1beta1.AddToScheme} {
		if err := add(s); err != nil {
			if t == nil {
				panic(err) // TestMain: a scheme that cannot be built is a programming error
			}
			require.NoError(t, err)
		}
	}
	return s
}

// operator is a manager serving the pod webhook where envtest's API server
// calls it, over TLS with envtest's certificate.
type operator struct {
	client  client.Client
	reg     *prometheus.Registry
	cancel  context.CancelFunc
	stopped chan error
	ready   func() error
}

func startOperator(t *testing.T, s instrumentation.Settings) *operator {
	t.Helper()
	return startOperatorWith(t, s, false)
}

// startOperatorWith starts the operator, with the collector sidecar mutator
// before the instrumentation one if sidecar is set, as cmd/operator does.
func startOperatorWith(t *testing.T, s instrumentation.Settings, sidecar bool) *operator {
	t.Helper()
	cfg := testenv.Require(t, env)
	scheme := testScheme(t)
	mgr := testenv.NewManager(t, cfg, ctrl.Options{
		Scheme: scheme,
		WebhookServer: ctrlwebhook.NewServer(ctrlwebhook.Options{
			Host: env.Webhook.LocalServingHost, Port: env.Webhook.LocalServingPort, CertDir: env.Webhook.LocalServingCertDir,
		}),
	})
	reg := prometheus.NewRegistry()
	var before []PodMutator
	if sidecar {
		sm, err := NewSidecarMutator(cfg, mgr.GetClient(), mgr.GetAPIReader(), sidecarImage, reg)
		require.NoError(t, err)
		before = append(before, sm)
	}
	require.NoError(t, Setup(mgr, s, CrossNamespace{}, reg, env.Webhook.LocalServingCertDir, nil, before...))
	ctx, cancel := context.WithCancel(context.Background())
	op := &operator{client: mgr.GetClient(), reg: reg, cancel: cancel, stopped: make(chan error, 1)}
	go func() { op.stopped <- mgr.Start(ctx) }()
	started := mgr.GetWebhookServer().StartedChecker()
	cert := CertChecker(env.Webhook.LocalServingCertDir, "", "", nil)
	op.ready = func() error {
		if err := cert(&http.Request{}); err != nil {
			return err
		}
		return started(&http.Request{})
	}
	require.Eventually(t, func() bool { return op.ready() == nil }, 30*time.Second, 50*time.Millisecond, "webhook server never became ready")
	return op
}

func (o *operator) stop(t *testing.T) {
	t.Helper()
	o.cancel()
	require.NoError(t, <-o.stopped)
}

// workload is a namespace with a Deployment and the ReplicaSet it owns, as
// the Deployment controller would have made them (envtest runs none).
type workload struct {
	ns string
	rs *appsv1.ReplicaSet
}

func newWorkload(t testing.TB, c client.Client, ns string, nsAnnotations map[string]string) workload {
	t.Helper()
	ctx := t.Context()
	testenv.Namespace(t, c, ns, nsAnnotations)
	labels := map[string]string{"app": "my-app"}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "myapp", Image: "app:1"}}}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "my-app", Namespace: ns}, Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}
	require.NoError(t, c.Create(ctx, dep))
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{
		Name: "my-app-5d8f9c7b6", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID, Controller: ptr(true)}},
	}, Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}
	require.NoError(t, c.Create(ctx, rs))
	return workload{ns: ns, rs: rs}
}

func (w workload) pod(name string, annotations map[string]string, containers ...corev1.Container) *corev1.Pod {
	if len(containers) == 0 {
		containers = []corev1.Container{{Name: "myapp", Image: "registry.example/shop/app:1.4.2"}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: w.ns, Annotations: annotations, Labels: map[string]string{"app": "my-app"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: w.rs.Name, UID: w.rs.UID, Controller: ptr(true)}},
		},
		Spec: corev1.PodSpec{Containers: containers},
	}
}

func ptr[T any](v T) *T { return &v }

// view is the part of a stored pod the webhook is responsible for.
type view struct {
	Annotations           map[string]string `json:"annotations,omitempty"`
	ShareProcessNamespace *bool             `json:"shareProcessNamespace,omitempty"`
	InitContainers        []containerView   `json:"initContainers,omitempty"`
	Containers            []containerView   `json:"containers"`
	Volumes               []corev1.Volume   `json:"volumes,omitempty"`
}

type containerView struct {
	Name            string                      `json:"name"`
	Image           string                      `json:"image"`
	Command         []string                    `json:"command,omitempty"`
	Env             []corev1.EnvVar             `json:"env,omitempty"`
	VolumeMounts    []corev1.VolumeMount        `json:"volumeMounts,omitempty"`
	Resources       corev1.ResourceRequirements `json:"resources,omitempty"`
	SecurityContext *corev1.SecurityContext     `json:"securityContext,omitempty"`
}

func render(t *testing.T, pod *corev1.Pod) []byte {
	t.Helper()
	cv := func(cs []corev1.Container) []containerView {
		var out []containerView
		for _, c := range cs {
			out = append(out, containerView{Name: c.Name, Image: c.Image, Command: c.Command, Env: c.Env, VolumeMounts: c.VolumeMounts, Resources: c.Resources, SecurityContext: c.SecurityContext})
		}
		return out
	}
	out, err := yaml.Marshal(view{
		Annotations: pod.Annotations, ShareProcessNamespace: pod.Spec.ShareProcessNamespace,
		InitContainers: cv(pod.Spec.InitContainers), Containers: cv(pod.Spec.Containers), Volumes: pod.Spec.Volumes,
	})
	require.NoError(t, err)
	return out
}

func instrumentationIn(ns, name string, mutate func(*v1alpha1.InstrumentationSpec)) *v1alpha1.Instrumentation {
	inst := &v1alpha1.Instrumentation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.InstrumentationSpec{
			Exporter:    v1alpha1.Exporter{Endpoint: "http://otel-collector.observability:4318"},
			Propagators: []v1alpha1.Propagator{"tracecontext", "baggage"},
			Sampler:     v1alpha1.Sampler{Type: v1alpha1.ParentBasedTraceIDRatio, Argument: "0.25"},
		},
	}
	if mutate != nil {
		mutate(&inst.Spec)
	}
	return inst
}

// eventsFor lists the events regarding obj's kind and name in ns.
func eventsFor(t *testing.T, c client.Client, ns, kind, name string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	require.NoError(t, c.List(t.Context(), &list, client.InNamespace(ns)))
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func TestPodWebhook(t *testing.T) {
	cfg := testenv.Require(t, env)
	settings := instrumentation.DefaultSettings()
	settings.Enabled[instrumentation.Go] = true
	settings.Enabled[instrumentation.Nginx] = true
	op := startOperator(t, settings)
	c := testenv.Client(t, cfg, testScheme(t))

	t.Run("group", func(t *testing.T) {
		for _, tc := range []struct {
			lang       instrumentation.Language
			spec       func(*v1alpha1.InstrumentationSpec)
			containers []corev1.Container
			extra      map[string]string
		}{
			{lang: instrumentation.Java, spec: func(s *v1alpha1.InstrumentationSpec) {
				s.Java.Env = []corev1.EnvVar{{Name: "OTEL_JAVAAGENT_DEBUG", Value: "true"}}
			}, containers: []corev1.Container{{Name: "myapp", Image: "registry.example/shop/app:1.4.2", Env: []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS", Value: "-Xmx256m"}}}}},
			{lang: instrumentation.NodeJS},
			{lang: instrumentation.Python, extra: map[string]string{instrumentation.AnnotationPythonPlatform: "musl"}},
			{lang: instrumentation.DotNet},
			{lang: instrumentation.Go, extra: map[string]string{instrumentation.AnnotationGoTargetExe: "/usr/bin/server"}},
			{lang: instrumentation.SDK},
			{lang: instrumentation.ApacheHttpd, containers: []corev1.Container{{Name: "web", Image: "httpd:2.4"}}},
			{lang: instrumentation.Nginx, containers: []corev1.Container{{Name: "web", Image: "nginx:1.27.3"}}},
		} {
			t.Run(string(tc.lang), func(t *testing.T) {
				t.Parallel()
				ns := "lang-" + string(tc.lang)
				w := newWorkload(t, c, ns, nil)
				require.NoError(t, c.Create(t.Context(), instrumentationIn(ns, "default", tc.spec)))
				ann := map[string]string{instrumentation.InjectAnnotation(tc.lang): "true"}
				for k, v := range tc.extra {
					ann[k] = v
				}
				pod := w.pod("my-app-5d8f9c7b6-abcde", ann, tc.containers...)
				require.NoError(t, c.Create(t.Context(), pod))
				golden.Assert(t, string(render(t, pod)), "pod-"+string(tc.lang)+".golden.yaml")
				require.Equal(t, string(tc.lang), pod.Annotations[instrumentation.AnnotationInjected])
			})
		}

		t.Run("annotation values", func(t *testing.T) {
			t.Parallel()
			w := newWorkload(t, c, "values", nil)
			other := newWorkload(t, c, "values-other", nil)
			require.NoError(t, c.Create(t.Context(), instrumentationIn(w.ns, "mine", nil)))
			shared := instrumentationIn(other.ns, "shared", func(s *v1alpha1.InstrumentationSpec) {
				s.Exporter.Endpoint = "http://shared:4318"
			})
			shared.Annotations = map[string]string{AllowNamespacesAnnotation: "elsewhere, values"}
			require.NoError(t, c.Create(t.Context(), shared))
			// Another namespace's Instrumentation that does not list the
			// pod's namespace hands it nothing (its exporter headers and
			// literal env values are that namespace's).
			private := instrumentationIn(other.ns, "private", func(s *v1alpha1.InstrumentationSpec) {
				s.Exporter.Endpoint = "http://private:4318"
			})
			require.NoError(t, c.Create(t.Context(), private))
			for _, tc := range []struct {
				value, wantEndpoint string
			}{
				{"true", "http://otel-collector.observability:4318"},
				{"mine", "http://otel-collector.observability:4318"},
				{"values-other/shared", "http://shared:4318"},
				{"values-other/private", ""},
				{"false", ""},
				{"", ""},
			} {
				pod := w.pod("", map[string]string{instrumentation.InjectAnnotation(instrumentation.SDK): tc.value})
				pod.GenerateName = "my-app-"
				require.NoError(t, c.Create(t.Context(), pod))
				got := ""
				for _, e := range pod.Spec.Containers[0].Env {
					if e.Name == "OTEL_EXPORTER_OTLP_ENDPOINT" {
						got = e.Value
					}
				}
				require.Equal(t, tc.wantEndpoint, got, "value %q", tc.value)
			}
			waitForEvent(t, c, w, "InstrumentationNotInjected", "cross-namespace reference refused: Instrumentation values-other/private does not allow pods of namespace values")
			require.Equal(t, 1.0, counterValue(t, op.reg, "shardwise_instrumentation_cross_namespace_refused_total", map[string]string{"language": "sdk"}))
		})

		t.Run("namespace annotation", func(t *testing.T) {
			t.Parallel()
			w := newWorkload(t, c, "ns-annotated", map[string]string{instrumentation.InjectAnnotation(instrumentation.Python): "true"})
			require.NoError(t, c.Create(t.Context(), instrumentationIn(w.ns, "default", nil)))
			pod := w.pod("plain", nil)
			require.NoError(t, c.Create(t.Context(), pod))
			require.Equal(t, "python", pod.Annotations[instrumentation.AnnotationInjected])
			// The pod's false wins over the namespace's true.
			optOut := w.pod("opted-out", map[string]string{instrumentation.InjectAnnotation(instrumentation.Python): "false"})
			require.NoError(t, c.Create(t.Context(), optOut))
			require.Empty(t, optOut.Spec.InitContainers)
		})

		t.Run("multi-language", func(t *testing.T) {
			t.Parallel()
			w := newWorkload(t, c, "multi", nil)
			require.NoError(t, c.Create(t.Context(), instrumentationIn(w.ns, "default", nil)))
			pod := w.pod("my-app-5d8f9c7b6-multi", map[string]string{
				instrumentation.InjectAnnotation(instrumentation.Java):       "true",
				instrumentation.InjectAnnotation(instrumentation.NodeJS):     "true",
				instrumentation.ContainersAnnotation(instrumentation.Java):   "backend",
				instrumentation.ContainersAnnotation(instrumentation.NodeJS): "frontend",
			}, corev1.Container{Name: "backend", Image: "eclipse-temurin:21"}, corev1.Container{Name: "frontend", Image: "node:22"})
			require.NoError(t, c.Create(t.Context(), pod))
			golden.Assert(t, string(render(t, pod)), "pod-multi.golden.yaml")

			// Without container names for every language: refused with a reason.
			bad := w.pod("my-app-5d8f9c7b6-bad", map[string]string{
				instrumentation.InjectAnnotation(instrumentation.Java):     "true",
				instrumentation.InjectAnnotation(instrumentation.NodeJS):   "true",
				instrumentation.ContainersAnnotation(instrumentation.Java): "backend",
			}, corev1.Container{Name: "backend", Image: "eclipse-temurin:21"}, corev1.Container{Name: "frontend", Image: "node:22"})
			require.NoError(t, c.Create(t.Context(), bad))
			require.Empty(t, bad.Spec.InitContainers)
			require.Eventually(t, func() bool {
				for _, e := range eventsFor(t, c, w.ns, "ReplicaSet", w.rs.Name) {
					if e.Reason == "InstrumentationNotInjected" && strings.Contains(e.Note, "please provide container names for all instrumentations") {
						return true
					}
				}
				return false
			}, 20*time.Second, 100*time.Millisecond)
		})

		t.Run("missing instrumentation", func(t *testing.T) {
			t.Parallel()
			w := newWorkload(t, c, "missing", nil)
			pod := w.pod("my-app-5d8f9c7b6-miss", map[string]string{instrumentation.InjectAnnotation(instrumentation.Java): "nope"})
			want := pod.DeepCopy()
			require.NoError(t, c.Create(t.Context(), pod))
			require.Equal(t, want.Spec.Containers[0].Env, pod.Spec.Containers[0].Env)
			require.Empty(t, pod.Spec.InitContainers)
			require.Empty(t, pod.Spec.Volumes)
			require.NotContains(t, pod.Annotations, instrumentation.AnnotationInjected)
			var note string
			require.Eventually(t, func() bool {
				for _, e := range eventsFor(t, c, w.ns, "ReplicaSet", w.rs.Name) {
					if e.Reason == "InstrumentationNotInjected" && e.Type == corev1.EventTypeWarning {
						note = e.Note
						return true
					}
				}
				return false
			}, 20*time.Second, 100*time.Millisecond)
			require.Contains(t, note, "instrumentation.opentelemetry.io/inject-java")
			require.Contains(t, note, "instrumentation missing/nope not found")

			// A bare pod: the event goes to the namespace.
			bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: w.ns, Annotations: map[string]string{instrumentation.InjectAnnotation(instrumentation.Python): "true"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "python:3"}}}}
			require.NoError(t, c.Create(t.Context(), bare))
			require.Eventually(t, func() bool {
				for _, e := range eventsFor(t, c, w.ns, "Namespace", w.ns) {
					if strings.Contains(e.Note, "no OpenTelemetry Instrumentation instances available") {
						return true
					}
				}
				return false
			}, 20*time.Second, 100*time.Millisecond)
			// Another bare pod's finding, with the same reason, is an event
			// of its own (related: the pod), not a repeat of the first one's
			// that would hide its note.
			other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare-2", Namespace: w.ns, Annotations: map[string]string{instrumentation.InjectAnnotation(instrumentation.NodeJS): "nope-2"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "node:22"}}}}
			require.NoError(t, c.Create(t.Context(), other))
			require.Eventually(t, func() bool {
				for _, e := range eventsFor(t, c, w.ns, "Namespace", w.ns) {
					if strings.Contains(e.Note, "instrumentation missing/nope-2 not found") {
						return e.Related != nil && e.Related.Kind == "Pod" && e.Related.Name == "bare-2"
					}
				}
				return false
			}, 20*time.Second, 100*time.Millisecond)
		})
	})

	require.Equal(t, 1.0, injections(t, op.reg, "java", "unresolved"))
	require.Equal(t, 1.0, injections(t, op.reg, "python", "unresolved"))
	require.GreaterOrEqual(t, injections(t, op.reg, "java", "injected"), 2.0)
	require.Equal(t, 1.0, injections(t, op.reg, "java", "invalid"))

	// With the operator gone, failurePolicy Ignore admits pods unchanged.
	op.stop(t)
	require.Error(t, op.ready(), "readiness must fail once the webhook server is down")
	w := newWorkload(t, c, "operator-down", nil)
	require.NoError(t, c.Create(t.Context(), instrumentationIn(w.ns, "default", nil)))
	pod := w.pod("admitted", map[string]string{instrumentation.InjectAnnotation(instrumentation.Java): "true"})
	require.NoError(t, c.Create(t.Context(), pod))
	require.Empty(t, pod.Spec.InitContainers)
}

// injections is the counter's value for language and result.
func injections(t *testing.T, reg *prometheus.Registry, lang, result string) float64 {
	t.Helper()
	return counterValue(t, reg, "shardwise_instrumentation_injections_total", map[string]string{"language": lang, "result": result})
}

// counterValue is the value of the counter name whose labels include want.
func counterValue(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
