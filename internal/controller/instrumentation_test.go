package controller_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/instrumentation"
	"github.com/shardwise/shardwise/internal/testenv"
)

// TestUninstrumentedPods: pods created before their Instrumentation (no
// pod webhook runs here, as when it was down) are counted and named on its
// status, with a Warning event; an injected pod, a pod asking for another
// Instrumentation and one asking for nothing are not; the namespace's
// annotation asks for its pods; a deleted pod leaves the count.
func TestUninstrumentedPods(t *testing.T) {
	t.Parallel()
	const ns = "uninstrumented"
	h := startClient(t, ns)
	ctx := t.Context()
	pod := func(name string, annotations map[string]string) {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
		}
		require.NoError(t, h.client.Create(ctx, p))
	}
	java := instrumentation.InjectAnnotation(instrumentation.Java)
	pod("before-a", map[string]string{java: "true"})
	pod("before-b", map[string]string{java: "java"})
	pod("before-c", map[string]string{java: ns + "/java"})
	pod("injected", map[string]string{java: "true", instrumentation.AnnotationInjected: "java"})
	pod("other", map[string]string{java: "someone-else"})
	pod("opted-out", map[string]string{java: "false"})
	pod("plain", nil)

	mgr := testenv.NewManager(t, testenv.Require(t, env), ctrl.Options{Scheme: h.scheme, Cache: testenv.CacheIn(ns)})
	r := &controller.InstrumentationReconciler{Client: mgr.GetClient(), Scheme: h.scheme, Recorder: mgr.GetEventRecorder("shardwise-operator")}
	require.NoError(t, r.SetupWithManager(mgr, controllerOptions(2)))
	testenv.Run(t, mgr.Start)

	_, err := h.createYAML(t, ns, `
apiVersion: opentelemetry.io/v1alpha1
kind: Instrumentation
metadata: {name: java}
spec:
  exporter: {endpoint: "http://collector:4318"}
`)
	require.NoError(t, err)
	status := func(want int32, names ...string) {
		t.Helper()
		eventually(t, waitFor, func() error {
			var inst v1alpha1.Instrumentation
			if err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "java"}, &inst); err != nil {
				return err
			}
			if inst.Status.UninstrumentedPods != want || fmt.Sprint(inst.Status.UninstrumentedPodNames) != fmt.Sprint(names) {
				return fmt.Errorf("status %d %v, want %d %v", inst.Status.UninstrumentedPods, inst.Status.UninstrumentedPodNames, want, names)
			}
			return nil
		})
	}
	status(3, "before-a", "before-b", "before-c")
	requireWarningEvent(t, h, ns, "java", controller.ReasonPodsNotInstrumented)

	// The namespace asks for java for every pod that says nothing.
	var nsObj corev1.Namespace
	require.NoError(t, h.client.Get(ctx, client.ObjectKey{Name: ns}, &nsObj))
	nsObj.Annotations = map[string]string{java: "true"}
	require.NoError(t, h.client.Update(ctx, &nsObj))
	status(4, "before-a", "before-b", "before-c", "plain")

	// A restart instruments them: here, they go.
	for _, n := range []string{"before-a", "before-b", "before-c", "plain"} {
		require.NoError(t, h.client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}))
	}
	status(0)
}
