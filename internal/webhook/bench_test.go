package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/instrumentation"
	"github.com/shardwise/shardwise/internal/testenv"
)

// BenchmarkAdmissionReview measures one pod admission review in process, as
// the webhook server's handler sees it: decode, namespace from the cache,
// Instrumentation and owner chain (ReplicaSet -> Deployment) from the cache,
// Java injection, JSON patch. It reports p50 and p99 latency in
// microseconds. The cache is the manager's, filled from envtest.
func BenchmarkAdmissionReview(b *testing.B) {
	cfg := testenv.Require(b, env)
	scheme := testScheme(b)
	mgr := testenv.NewManager(b, cfg, ctrl.Options{Scheme: scheme})
	testenv.Run(b, mgr.Start)
	c := testenv.Client(b, cfg, scheme)
	benchRuns++
	ns := fmt.Sprintf("bench-%d", benchRuns)
	w := newWorkload(b, c, ns, nil)
	require.NoError(b, c.Create(context.Background(), instrumentationIn(ns, "default", nil)))

	inst := &InstrumentationMutator{Reader: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Settings: instrumentation.DefaultSettings()}
	h := NewPodHandler(scheme, mgr.GetClient(), nil, inst)
	for _, bc := range []struct {
		name        string
		annotations map[string]string
	}{
		{"java", map[string]string{instrumentation.InjectAnnotation(instrumentation.Java): "true"}},
		{"not-annotated", nil},
	} {
		b.Run(bc.name, func(b *testing.B) { benchReview(b, h, w, ns, bc.annotations) })
	}
}

func benchReview(b *testing.B, h *PodHandler, w workload, ns string, annotations map[string]string) {
	pod := w.pod("", annotations)
	pod.GenerateName = "my-app-5d8f9c7b6-"
	raw, err := json.Marshal(pod)
	require.NoError(b, err)
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "bench", Operation: admissionv1.Create, Namespace: ns,
		Kind:   metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Object: runtime.RawExtension{Raw: raw},
	}}
	// Warm up: the first review starts the informers and waits for them.
	resp := h.Handle(context.Background(), req)
	require.True(b, resp.Allowed)
	wantPatch := len(annotations) > 0
	require.Equal(b, wantPatch, len(resp.Patches) > 0, "the warm-up review must inject exactly when annotated")

	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		resp := h.Handle(context.Background(), req)
		lat = append(lat, time.Since(start))
		if (len(resp.Patches) > 0) != wantPatch {
			b.Fatal("unexpected patch")
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

// benchRuns names each run's namespace (go test -count runs it again).
var benchRuns int

// BenchmarkMutate is the pure mutator alone.
func BenchmarkMutate(b *testing.B) {
	pod := (workload{ns: "bench", rs: &appsv1.ReplicaSet{}}).pod("", map[string]string{instrumentation.InjectAnnotation(instrumentation.Java): "true"})
	in := instrumentation.Input{
		Namespace:        metav1.ObjectMeta{Name: "bench"},
		Instrumentations: map[instrumentation.Language]*v1alpha1.Instrumentation{instrumentation.Java: instrumentationIn("bench", "default", nil)},
		Owners:           []instrumentation.Owner{{Kind: "ReplicaSet", Name: "my-app-5d8f9c7b6"}, {Kind: "Deployment", Name: "my-app"}},
	}
	s := instrumentation.DefaultSettings()
	b.ReportAllocs()
	for b.Loop() {
		p := pod.DeepCopy()
		instrumentation.Mutate(p, in, s)
	}
}
