package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/shardwise/shardwise/internal/instrumentation"
	"github.com/shardwise/shardwise/internal/testenv"
)

// addsContainer stands for a mutator that adds a container.
type addsContainer struct{}

func (addsContainer) Name() string { return "adds-container" }
func (addsContainer) Mutate(_ context.Context, _ *corev1.Namespace, pod *corev1.Pod) ([]Finding, error) {
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "otc-container", Image: "collector:1"})
	return nil, nil
}

// broken changes the pod, then fails.
type broken struct{}

func (broken) Name() string { return "broken" }
func (broken) Mutate(_ context.Context, _ *corev1.Namespace, pod *corev1.Pod) ([]Finding, error) {
	pod.Spec.Containers = nil
	pod.Labels = map[string]string{"broken": "true"}
	return []Finding{{Reason: "BrokenNote", Message: "broken noticed something"}}, errors.New("the collector is gone")
}

// panics changes the pod, then panics.
type panics struct{}

func (panics) Name() string { return "panics" }
func (panics) Mutate(_ context.Context, _ *corev1.Namespace, pod *corev1.Pod) ([]Finding, error) {
	pod.Labels = map[string]string{"panicked": "true"}
	panic("assignment to entry in nil map")
}

// recorder counts the Warning events the handler records.
type recorder struct{ events []string }

func (r *recorder) Eventf(_ runtime.Object, _ runtime.Object, _, reason, _, _ string, _ ...any) {
	r.events = append(r.events, reason)
}

// TestPodHandlerChain: a mutator that fails or panics is dropped alone; the sidecar's
// and the instrumentation's changes are both in the patch, and the failure
// is an admission warning.
func TestPodHandlerChain(t *testing.T) {
	cfg := testenv.Require(t, env)
	scheme := testScheme(t)
	c := testenv.Client(t, cfg, scheme)
	w := newWorkload(t, c, "chain", nil)
	require.NoError(t, c.Create(t.Context(), instrumentationIn(w.ns, "default", nil)))

	inst := &InstrumentationMutator{Reader: c, APIReader: c, Settings: instrumentation.DefaultSettings()}
	rec := &recorder{}
	h := NewPodHandler(scheme, c, rec, addsContainer{}, broken{}, panics{}, inst)
	pod := w.pod("chained", map[string]string{instrumentation.InjectAnnotation(instrumentation.Python): "true"})
	raw, err := json.Marshal(pod)
	require.NoError(t, err)
	resp := h.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "chain", Operation: admissionv1.Create, Namespace: w.ns,
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: raw},
	}})
	require.True(t, resp.Allowed)
	require.Contains(t, resp.Warnings, "broken noticed something")
	require.Contains(t, resp.Warnings, "broken: the collector is gone; its changes were dropped, the others kept")
	require.Contains(t, resp.Warnings, "panics: panic: assignment to entry in nil map; its changes were dropped, the others kept")
	require.Equal(t, []string{"BrokenNote", "PodMutationFailed", "PodMutationFailed"}, rec.events)

	ops, err := json.Marshal(resp.Patches)
	require.NoError(t, err)
	p, err := jsonpatch.DecodePatch(ops)
	require.NoError(t, err)
	patched, err := p.Apply(raw)
	require.NoError(t, err)
	var got corev1.Pod
	require.NoError(t, json.Unmarshal(patched, &got))
	require.Len(t, got.Spec.Containers, 2)
	require.Equal(t, "otc-container", got.Spec.Containers[1].Name)
	require.Equal(t, "opentelemetry-auto-instrumentation-python", got.Spec.InitContainers[0].Name)
	require.NotContains(t, got.Labels, "broken")
	require.NotContains(t, got.Labels, "panicked")

	// A server-side dry run gets the same answer and warnings, and leaves
	// no events.
	dry := true
	rec.events = nil
	dryResp := h.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "chain-dry-run", Operation: admissionv1.Create, Namespace: w.ns, DryRun: &dry,
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: raw},
	}})
	require.True(t, dryResp.Allowed)
	require.Equal(t, resp.Warnings, dryResp.Warnings)
	require.Len(t, dryResp.Patches, len(resp.Patches))
	require.Empty(t, rec.events)

	// Not a create: nothing to do.
	resp = h.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Update, Namespace: w.ns, Object: runtime.RawExtension{Raw: raw}}})
	require.True(t, resp.Allowed)
	require.Empty(t, resp.Patches)
}
