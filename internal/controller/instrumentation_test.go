package controller_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/instrumentation"
	"github.com/shardwise/shardwise/internal/manifests"
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
	r := &controller.InstrumentationReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: h.scheme, Recorder: mgr.GetEventRecorder("shardwise-operator")}
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

// TestRestartUninstrumented: with the opt-in annotation the operator
// restarts the workloads of the uninstrumented pods one at a time: the
// Deployment first (by name), then, once its rollout is done, the
// StatefulSet, but only when its PodDisruptionBudget allows a disruption.
// envtest runs no workload controllers: the test plays their status.
func TestRestartUninstrumented(t *testing.T) {
	t.Parallel()
	const ns = "restart-uninstrumented"
	h := startClient(t, ns)
	ctx := t.Context()
	java := map[string]string{instrumentation.InjectAnnotation(instrumentation.Java): "true"}
	template := func(app string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}, Annotations: java},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
		}
	}
	selector := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: appsv1.DeploymentSpec{Selector: selector("app"), Template: template("app")}}
	require.NoError(t, h.client.Create(ctx, dep))
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-1"},
		Spec: appsv1.ReplicaSetSpec{Selector: selector("app"), Template: template("app")}}
	require.NoError(t, controllerutil.SetControllerReference(dep, rs, h.scheme))
	require.NoError(t, h.client.Create(ctx, rs))
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: appsv1.StatefulSetSpec{Selector: selector("db"), Template: template("db")}}
	require.NoError(t, h.client.Create(ctx, sts))
	pod := func(name string, owner client.Object, injected bool) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": owner.GetName()}, Annotations: maps.Clone(java)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
		if injected {
			p.Annotations[instrumentation.AnnotationInjected] = "java"
		}
		require.NoError(t, controllerutil.SetControllerReference(owner, p, h.scheme))
		require.NoError(t, h.client.Create(ctx, p))
	}
	pod("app-1-x", rs, false)
	pod("db-0", sts, false)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: selector("db"), MaxUnavailable: ptr.To(intstr.FromInt32(0))}}
	require.NoError(t, h.client.Create(ctx, pdb))

	mgr := testenv.NewManager(t, testenv.Require(t, env), ctrl.Options{Scheme: h.scheme, Cache: testenv.CacheIn(ns)})
	r := &controller.InstrumentationReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: h.scheme,
		Recorder: mgr.GetEventRecorder("shardwise-operator"), RestartRecheck: 100 * time.Millisecond}
	require.NoError(t, r.SetupWithManager(mgr, controllerOptions(2)))
	testenv.Run(t, mgr.Start)
	_, err := h.createYAML(t, ns, `
apiVersion: opentelemetry.io/v1alpha1
kind: Instrumentation
metadata:
  name: java
  annotations: {instrumentation.shardwise.io/restart-uninstrumented: "true"}
spec:
  exporter: {endpoint: "http://collector:4318"}
`)
	require.NoError(t, err)
	restartedAt := func(obj client.Object) string {
		require.NoError(t, h.client.Get(ctx, client.ObjectKeyFromObject(obj), obj))
		switch o := obj.(type) {
		case *appsv1.Deployment:
			return o.Spec.Template.Annotations[manifests.AnnotationRestartedAt]
		case *appsv1.StatefulSet:
			return o.Spec.Template.Annotations[manifests.AnnotationRestartedAt]
		}
		return ""
	}
	instStatus := func() v1alpha1.InstrumentationStatus {
		var inst v1alpha1.Instrumentation
		require.NoError(t, h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "java"}, &inst))
		return inst.Status
	}
	eventually(t, waitFor, func() error {
		if restartedAt(dep) == "" || instStatus().Restarting != "Deployment/app" {
			return fmt.Errorf("the Deployment is not restarted: %+v", instStatus())
		}
		return nil
	})
	// One at a time: the StatefulSet waits for the Deployment's rollout.
	time.Sleep(500 * time.Millisecond)
	require.Empty(t, restartedAt(sts), "restarted before the Deployment's rollout was done")

	// The rollout is done (as the Deployment controller would report it),
	// and its new pod is instrumented.
	require.NoError(t, h.client.Get(ctx, client.ObjectKeyFromObject(dep), dep))
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	require.NoError(t, h.client.Status().Update(ctx, dep))
	require.NoError(t, h.client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-1-x"}}))
	pod("app-1-y", rs, true)

	// The StatefulSet's budget allows no disruption: it waits.
	requireWarningOrNormalEvent(t, h, ns, "java", controller.ReasonRestartWaits)
	require.Empty(t, restartedAt(sts))
	require.NoError(t, h.client.Get(ctx, client.ObjectKeyFromObject(pdb), pdb))
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 1, CurrentHealthy: 1, DesiredHealthy: 0, ExpectedPods: 1}
	require.NoError(t, h.client.Status().Update(ctx, pdb))
	// The reconciler patches the StatefulSet, then writes the status.
	eventually(t, waitFor, func() error {
		if restartedAt(sts) == "" || instStatus().Restarting != "StatefulSet/db" {
			return fmt.Errorf("the StatefulSet is not restarted: %+v", instStatus())
		}
		return nil
	})
	st := instStatus()
	require.Equal(t, "StatefulSet/db", st.Restarting)
	require.Equal(t, []string{"Deployment/app", "StatefulSet/db"}, st.Restarted)
	require.EqualValues(t, 1, st.UninstrumentedPods, "db-0 until its rollout replaces it")
}

// requireWarningOrNormalEvent waits for an event of reason on the object
// name in ns.
func requireWarningOrNormalEvent(t *testing.T, h harness, ns, name, reason string) {
	t.Helper()
	eventually(t, waitFor, func() error {
		var list eventsv1.EventList
		if err := h.client.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason {
				return nil
			}
		}
		return fmt.Errorf("no %s event on %s/%s yet", reason, ns, name)
	})
}
