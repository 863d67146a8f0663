package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/instrumentation"
)

// +kubebuilder:rbac:groups=opentelemetry.io,resources=instrumentations,verbs=get;list;watch
// +kubebuilder:rbac:groups=opentelemetry.io,resources=instrumentations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods;namespaces,verbs=get;list;watch

// ReasonPodsNotInstrumented is the reason of the Warning event an
// Instrumentation gets when pods that ask for it run uninstrumented.
const ReasonPodsNotInstrumented = "PodsNotInstrumented"

// maxListedPods is how many uninstrumented pods an Instrumentation's status
// names.
const maxListedPods = 5

// InstrumentationReconciler reports, on each Instrumentation, the pods that
// ask for it and were never instrumented (upstream leaves them silent): the
// pod webhook only acts when a pod is created, so a pod created before its
// Instrumentation, or while the webhook was down, runs without the agent
// until its workload restarts. It reads pods' metadata only (their
// annotations say what they ask for and whether they were injected).
type InstrumentationReconciler struct {
	Client client.Client
	// APIReader reads the workloads, ReplicaSets and PodDisruptionBudgets of
	// the applications, which the operator's cache does not hold (it caches
	// its own objects of these kinds only).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	// RestartRecheck is how often a restart looks again at the rollout it
	// waits for, or at a disruption budget that allows none; zero means 15 s.
	RestartRecheck time.Duration
}

var _ reconcile.Reconciler = (*InstrumentationReconciler)(nil)

// SetupWithManager registers the reconciler.
func (r *InstrumentationReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		// The spec, and the restart annotation.
		For(&v1alpha1.Instrumentation{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// Creations, deletions and annotation changes (the injection marker
		// is an annotation).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.inNamespace), builder.OnlyMetadata,
			builder.WithPredicates(predicate.AnnotationChangedPredicate{})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.ofNamespace), builder.OnlyMetadata,
			builder.WithPredicates(predicate.AnnotationChangedPredicate{})).
		WithOptions(opts).
		Named("instrumentation").
		Complete(r)
}

// inNamespace maps a pod to the Instrumentations of its namespace.
func (r *InstrumentationReconciler) inNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return r.instrumentationsIn(ctx, o.GetNamespace())
}

// ofNamespace maps a namespace to its Instrumentations.
func (r *InstrumentationReconciler) ofNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return r.instrumentationsIn(ctx, o.GetName())
}

func (r *InstrumentationReconciler) instrumentationsIn(ctx context.Context, ns string) []reconcile.Request {
	var list v1alpha1.InstrumentationList
	if err := r.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// Reconcile counts the Instrumentation's uninstrumented pods into its
// status, with a Warning event when the set changes and is not empty.
func (r *InstrumentationReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var inst v1alpha1.Instrumentation
	if err := r.Client.Get(ctx, req.NamespacedName, &inst); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	pods, err := r.uninstrumented(ctx, &inst)
	if err != nil {
		return reconcile.Result{}, err
	}
	names := make([]string, len(pods))
	for i := range pods {
		names[i] = pods[i].Name
	}
	before := inst.Status.DeepCopy()
	requeue, err := r.restart(ctx, &inst, pods)
	if err != nil {
		return reconcile.Result{}, err
	}
	inst.Status.UninstrumentedPods = int32(len(names))
	inst.Status.UninstrumentedPodNames = names[:min(len(names), maxListedPods)]
	if len(inst.Status.UninstrumentedPodNames) == 0 {
		inst.Status.UninstrumentedPodNames = nil
	}
	if equality.Semantic.DeepEqual(before, &inst.Status) {
		return reconcile.Result{RequeueAfter: requeue}, nil
	}
	if len(names) > 0 && r.Recorder != nil && !slices.Equal(before.UninstrumentedPodNames, inst.Status.UninstrumentedPodNames) {
		r.Recorder.Eventf(&inst, nil, corev1.EventTypeWarning, ReasonPodsNotInstrumented, "Report",
			"%d pods ask for this Instrumentation but were not instrumented (created before it, or while the pod webhook was down), e.g. %s: restart their workloads",
			len(names), strings.Join(inst.Status.UninstrumentedPodNames, ", "))
	}
	if err := r.Client.Status().Update(ctx, &inst); err != nil {
		return reconcile.Result{}, fmt.Errorf("update instrumentation status: %w", err)
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// uninstrumented lists, sorted by name, the pods of inst's namespace that
// ask for inst and carry no injection.
func (r *InstrumentationReconciler) uninstrumented(ctx context.Context, inst *v1alpha1.Instrumentation) ([]metav1.PartialObjectMetadata, error) {
	var nsMeta metav1.PartialObjectMetadata
	nsMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Client.Get(ctx, client.ObjectKey{Name: inst.Namespace}, &nsMeta); err != nil {
		return nil, fmt.Errorf("read namespace %s: %w", inst.Namespace, err)
	}
	var pods metav1.PartialObjectMetadataList
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := r.Client.List(ctx, &pods, client.InNamespace(inst.Namespace)); err != nil {
		return nil, fmt.Errorf("list pods of %s: %w", inst.Namespace, err)
	}
	var list v1alpha1.InstrumentationList
	if err := r.Client.List(ctx, &list, client.InNamespace(inst.Namespace)); err != nil {
		return nil, fmt.Errorf("list instrumentations of %s: %w", inst.Namespace, err)
	}
	only := len(list.Items) == 1 // "true" names the namespace's only one
	var out []metav1.PartialObjectMetadata
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		if _, injected := p.Annotations[instrumentation.AnnotationInjected]; injected {
			continue
		}
		pod := &corev1.Pod{ObjectMeta: p.ObjectMeta}
		if slices.ContainsFunc(instrumentation.Requests(nsMeta.ObjectMeta, pod), func(q instrumentation.Request) bool {
			return asksFor(q.Value, inst, only)
		}) {
			out = append(out, *p)
		}
	}
	slices.SortFunc(out, func(a, b metav1.PartialObjectMetadata) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// asksFor says whether an inject annotation's value names inst, for a pod of
// inst's namespace: "true" when inst is the namespace's only one, its name,
// or its namespace/name.
func asksFor(value string, inst *v1alpha1.Instrumentation, only bool) bool {
	switch {
	case strings.EqualFold(value, "true"):
		return only
	case strings.Contains(value, "/"):
		return value == inst.Namespace+"/"+inst.Name
	default:
		return value == inst.Name
	}
}
