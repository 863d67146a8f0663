package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/manifests"
)

// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;patch
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch

// AnnotationRestartUninstrumented on an Instrumentation ("true") lets the
// operator restart, one at a time, the workloads of the pods that ask for
// it and were not instrumented. The tenant rights admission policy lets only
// whoever may patch Deployments, StatefulSets and DaemonSets of the
// namespace set it.
const AnnotationRestartUninstrumented = "instrumentation.shardwise.io/restart-uninstrumented"

// Reasons of the restart's events.
const (
	ReasonRestartingUninstrumented = "RestartingUninstrumented"
	ReasonRestartWaits             = "RestartWaitsForDisruptionBudget"
)

// Bounds of the restarts.
const (
	// defaultRestartRecheck is InstrumentationReconciler.RestartRecheck's
	// default.
	defaultRestartRecheck = 15 * time.Second
	// maxRestarted is how many restarted workloads the status remembers.
	maxRestarted = 1000
)

// workloadRef is a workload of a pod: Kind/name, in the Instrumentation's
// namespace.
type workloadRef struct{ kind, name string }

func (w workloadRef) String() string { return w.kind + "/" + w.name }

func parseWorkload(s string) (workloadRef, bool) {
	kind, name, ok := strings.Cut(s, "/")
	if !ok || name == "" || !slices.Contains([]string{"Deployment", "StatefulSet", "DaemonSet"}, kind) {
		return workloadRef{}, false
	}
	return workloadRef{kind, name}, true
}

// restart advances the restart of the workloads of the uninstrumented pods
// pods (in inst's namespace) by at most one step and says when to look
// again (0: nothing left to do). It waits for the rollout of the workload it
// restarted last, then restarts the next that none of its namespace's
// PodDisruptionBudgets forbids to disrupt now. Without the annotation it
// forgets what it did, so that setting it again starts over.
func (r *InstrumentationReconciler) restart(ctx context.Context, inst *v1alpha1.Instrumentation, pods []metav1.PartialObjectMetadata) (time.Duration, error) {
	st := &inst.Status
	if inst.Annotations[AnnotationRestartUninstrumented] != "true" {
		st.Restarting, st.Restarted = "", nil
		return 0, nil
	}
	if w, ok := parseWorkload(st.Restarting); ok {
		done, err := r.rolledOut(ctx, inst.Namespace, w)
		if err != nil {
			return 0, err
		}
		if !done {
			return r.recheck(), nil
		}
		st.Restarting = ""
	}
	var todo []workloadRef
	for i := range pods {
		w, ok, err := r.workloadOf(ctx, &pods[i])
		if err != nil {
			return 0, err
		}
		if ok && !slices.Contains(st.Restarted, w.String()) && !slices.Contains(todo, w) {
			todo = append(todo, w)
		}
	}
	slices.SortFunc(todo, func(a, b workloadRef) int { return strings.Compare(a.String(), b.String()) })
	for _, w := range todo {
		template, err := r.podTemplateLabels(ctx, inst.Namespace, w)
		if err != nil {
			return 0, err
		}
		if template == nil {
			continue // gone meanwhile
		}
		blocking, err := r.blockingBudget(ctx, inst.Namespace, template)
		if err != nil {
			return 0, err
		}
		if blocking != "" {
			r.event(inst, corev1.EventTypeNormal, ReasonRestartWaits, "%s waits: PodDisruptionBudget %s allows no disruption now", w, blocking)
			return r.recheck(), nil
		}
		if err := r.stampRestart(ctx, inst.Namespace, w); err != nil {
			return 0, err
		}
		st.Restarting = w.String()
		st.Restarted = append(st.Restarted, w.String())
		if len(st.Restarted) > maxRestarted {
			st.Restarted = st.Restarted[len(st.Restarted)-maxRestarted:]
		}
		r.event(inst, corev1.EventTypeNormal, ReasonRestartingUninstrumented, "restarting %s so that its pods are instrumented", w)
		return r.recheck(), nil
	}
	return 0, nil
}

func (r *InstrumentationReconciler) event(inst *v1alpha1.Instrumentation, typ, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(inst, nil, typ, reason, "Restart", format, args...)
	}
}

// workloadOf is the workload a pod belongs to: its StatefulSet or DaemonSet,
// or the Deployment of its ReplicaSet; false for any other (a Job, a bare
// pod), which the operator does not restart.
func (r *InstrumentationReconciler) workloadOf(ctx context.Context, pod *metav1.PartialObjectMetadata) (workloadRef, bool, error) {
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil {
		return workloadRef{}, false, nil
	}
	switch owner.Kind {
	case "StatefulSet", "DaemonSet":
		return workloadRef{owner.Kind, owner.Name}, true, nil
	case "ReplicaSet":
		var rs metav1.PartialObjectMetadata
		rs.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
		if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: owner.Name}, &rs); err != nil {
			return workloadRef{}, false, client.IgnoreNotFound(err)
		}
		if d := metav1.GetControllerOfNoCopy(&rs); d != nil && d.Kind == "Deployment" {
			return workloadRef{"Deployment", d.Name}, true, nil
		}
	}
	return workloadRef{}, false, nil
}

// workload reads w; nil when it is gone.
func (r *InstrumentationReconciler) workload(ctx context.Context, ns string, w workloadRef) (client.Object, error) {
	var obj client.Object
	switch w.kind {
	case "Deployment":
		obj = &appsv1.Deployment{}
	case "StatefulSet":
		obj = &appsv1.StatefulSet{}
	default:
		obj = &appsv1.DaemonSet{}
	}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: w.name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read %s: %w", w, err)
	}
	return obj, nil
}

// rolledOut says whether w's rollout is done (or w is gone).
func (r *InstrumentationReconciler) rolledOut(ctx context.Context, ns string, w workloadRef) (bool, error) {
	obj, err := r.workload(ctx, ns, w)
	if err != nil || obj == nil {
		return obj == nil, err
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		s := o.Status
		want := ptrDeref(o.Spec.Replicas, 1)
		return s.ObservedGeneration >= o.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want, nil
	case *appsv1.StatefulSet:
		s := o.Status
		want := ptrDeref(o.Spec.Replicas, 1)
		return s.ObservedGeneration >= o.Generation && s.UpdatedReplicas == want && s.ReadyReplicas == want && s.CurrentRevision == s.UpdateRevision, nil
	case *appsv1.DaemonSet:
		s := o.Status
		return s.ObservedGeneration >= o.Generation && s.UpdatedNumberScheduled == s.DesiredNumberScheduled && s.NumberAvailable == s.DesiredNumberScheduled, nil
	}
	return true, nil
}

func ptrDeref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// podTemplateLabels are w's pod template's labels; nil when w is gone.
func (r *InstrumentationReconciler) podTemplateLabels(ctx context.Context, ns string, w workloadRef) (labels.Set, error) {
	obj, err := r.workload(ctx, ns, w)
	if err != nil || obj == nil {
		return nil, err
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return labels.Set(o.Spec.Template.Labels), nil
	case *appsv1.StatefulSet:
		return labels.Set(o.Spec.Template.Labels), nil
	case *appsv1.DaemonSet:
		return labels.Set(o.Spec.Template.Labels), nil
	}
	return nil, nil
}

// blockingBudget names a PodDisruptionBudget of ns that selects pods with
// podLabels and allows no disruption now, or "".
func (r *InstrumentationReconciler) blockingBudget(ctx context.Context, ns string, podLabels labels.Set) (string, error) {
	var list policyv1.PodDisruptionBudgetList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return "", fmt.Errorf("list PodDisruptionBudgets of %s: %w", ns, err)
	}
	for _, pdb := range list.Items {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(podLabels) {
			continue
		}
		if pdb.Status.DisruptionsAllowed < 1 {
			return pdb.Name, nil
		}
	}
	return "", nil
}

// stampRestart rolls w's pods as kubectl rollout restart does.
func (r *InstrumentationReconciler) stampRestart(ctx context.Context, ns string, w workloadRef) error {
	obj, err := r.workload(ctx, ns, w)
	if err != nil || obj == nil {
		return err
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"template":{"metadata":{"annotations":{"`+
		manifests.AnnotationRestartedAt+`":"`+time.Now().UTC().Format(time.RFC3339)+`"}}}}}`))
	if err := r.Client.Patch(ctx, obj, patch, client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("restart %s: %w", w, err)
	}
	return nil
}

// recheck is RestartRecheck or its default.
func (r *InstrumentationReconciler) recheck() time.Duration {
	if r.RestartRecheck > 0 {
		return r.RestartRecheck
	}
	return defaultRestartRecheck
}
