package controller

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests"
)

// Condition type and reasons of the Ready condition.
const (
	ConditionReady = "Ready"

	ReasonReconciled       = "Reconciled"
	ReasonInvalidConfig    = "InvalidConfig"
	ReasonModeNotSupported = "ModeNotSupported"
	ReasonApplyFailed      = "ApplyFailed"
)

// +kubebuilder:rbac:groups=opentelemetry.io,resources=opentelemetrycollectors;targetallocators,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=opentelemetry.io,resources=opentelemetrycollectors/status;targetallocators/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=opentelemetry.io,resources=opentelemetrycollectors/finalizers;targetallocators/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps;services;serviceaccounts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=statefulsets;deployments;daemonsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses;networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// CollectorReconciler reconciles an OpenTelemetryCollector into its objects.
type CollectorReconciler struct {
	Client   client.Client
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
	Settings manifests.Settings
	// PodReader lists pods uncached (the manager's API reader), to count the
	// pods a sidecar-mode collector was injected into; nil counts none.
	PodReader client.Reader
	// MonitoringRecheck is how often a collector with
	// observability.metrics.enableMetrics looks again for
	// prometheus-operator's API when it is not served (the operator does not
	// watch it); zero means a minute.
	MonitoringRecheck time.Duration

	memo        applyMemo
	certManager certManagerAPI
	monitoring  monitoringAPI
}

// ReasonTargetAllocatorInUse is the Ready reason of a collector that names a
// TargetAllocator which already serves another collector.
const ReasonTargetAllocatorInUse = "TargetAllocatorInUse"

// specChanged passes the events that can change the desired objects: a new
// generation (spec), labels (LabelTargetAllocator) or annotations; not the
// operator's own status writes.
func specChanged() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})
}

var _ reconcile.Reconciler = (*CollectorReconciler)(nil)

// collectorKinds are the kinds a collector owns, pruned when no longer desired.
var collectorKinds = []schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
	corev1.SchemeGroupVersion.WithKind("Service"),
	appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
	appsv1.SchemeGroupVersion.WithKind("Deployment"),
	appsv1.SchemeGroupVersion.WithKind("DaemonSet"),
	rbacv1.SchemeGroupVersion.WithKind("Role"),
	rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
	policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"),
	autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"),
	networkingv1.SchemeGroupVersion.WithKind("Ingress"),
	networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"),
	v1alpha1.GroupVersion.WithKind("TargetAllocator"),
}

// SetupWithManager registers the reconciler; opts.MaxConcurrentReconciles bounds the parallel reconciles.
func (r *CollectorReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1beta1.OpenTelemetryCollector{}, builder.WithPredicates(specChanged())).
		// Collectors naming the same TargetAllocator: a change of one may
		// settle which of them the allocator serves.
		Watches(&v1beta1.OpenTelemetryCollector{}, handler.EnqueueRequestsFromMapFunc(r.siblings), builder.WithPredicates(specChanged())).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&appsv1.Deployment{}).
		Owns(&appsv1.DaemonSet{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&autoscalingv2.HorizontalPodAutoscaler{}).
		Owns(&networkingv1.Ingress{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Owns(&v1alpha1.TargetAllocator{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		// Its components' ClusterRole and binding, which it cannot own.
		Watches(&rbacv1.ClusterRole{}, handler.EnqueueRequestsFromMapFunc(annotatedOwner(manifests.ComponentCollector))).
		Watches(&rbacv1.ClusterRoleBinding{}, handler.EnqueueRequestsFromMapFunc(annotatedOwner(manifests.ComponentCollector))).
		// A TargetAllocator a collector names: its mtls settles the
		// collector's config and certificate volume.
		Watches(&v1alpha1.TargetAllocator{}, handler.EnqueueRequestsFromMapFunc(collectorsNaming(r.Client)), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(opts).
		Named("opentelemetrycollector").
		Complete(r)
}

// Reconcile builds the desired objects from a full read of the collector,
// applies them, prunes what is no longer desired and records status. Invalid
// input writes no object at all.
func (r *CollectorReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var c v1beta1.OpenTelemetryCollector
	if err := r.Client.Get(ctx, req.NamespacedName, &c); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, collectorClusterRBAC(applier{client: r.Client, scheme: r.Scheme}).finalize(ctx, &c)
	}
	if c.Spec.ManagementState == v1beta1.ManagementStateUnmanaged {
		return reconcile.Result{}, nil
	}
	st := collectorStatus(&c)
	o, err := r.reconcile(ctx, &c)
	if err != nil {
		return reconcile.Result{}, err
	}
	return reporter{client: r.Client, recorder: r.Recorder}.finish(ctx, st, o)
}

// reconcile builds and applies the collector's objects and fills its status
// but for the Ready condition; an error is a failure before any verdict.
func (r *CollectorReconciler) reconcile(ctx context.Context, c *v1beta1.OpenTelemetryCollector) (outcome, error) {
	referenced, err := r.referencedAllocator(ctx, c)
	if err != nil {
		return outcome{}, err
	}
	missing, err := r.certManager.certManagerMissing(r.Client, manifests.AllocatorMTLS(c, referenced), "spec.targetAllocator.mtls")
	if err != nil {
		return outcome{}, err
	}
	if missing != "" {
		// The collectors would wait for a client certificate nobody issues:
		// write nothing until cert-manager is installed.
		return degraded(ReasonCertManagerNotInstalled, missing).after(certManagerRecheck), nil
	}
	desired, err := manifests.BuildCollector(c, r.Settings, referenced)
	if err != nil {
		reason := ReasonInvalidConfig
		if errors.Is(err, manifests.ErrModeUnsupported) {
			reason = ReasonModeNotSupported
		}
		return invalid(reason, "build collector", err), nil
	}
	missingMonitor, err := r.dropUnservedMonitors(&desired)
	if err != nil {
		return outcome{}, err
	}
	if err := r.apply(ctx, c, desired); err != nil {
		return applyFailed(err), nil
	}
	r.grantComponents(ctx, c, desired)
	if err := r.observe(ctx, c, desired); err != nil {
		return outcome{}, err
	}
	conflict, err := r.allocatorConflict(ctx, c)
	if err != nil {
		return outcome{}, err
	}
	r.setMonitorCondition(c, missingMonitor)
	recheck := r.recheckAfter(c, missingMonitor != "")
	if conflict != "" {
		return degraded(ReasonTargetAllocatorInUse, conflict).after(recheck), nil
	}
	msg := "every desired object is applied"
	if missingMonitor != "" {
		msg = "every desired object is applied except the metrics monitor: see condition " + ConditionMetricsMonitor
	}
	return ready(msg).after(recheck), nil
}

// recheckAfter is when to reconcile a collector again without an event:
// what the operator does not watch (injected pods, prometheus-operator's
// kinds) is polled.
func (r *CollectorReconciler) recheckAfter(c *v1beta1.OpenTelemetryCollector, monitorMissing bool) time.Duration {
	var after []time.Duration
	if manifests.ModeOf(c) == v1beta1.ModeSidecar && r.PodReader != nil {
		after = append(after, sidecarRecount)
	}
	switch {
	case monitorMissing:
		after = append(after, r.monitoringRecheck())
	case c.Spec.Observability.Metrics.EnableMetrics:
		after = append(after, monitorResync)
	}
	if len(after) == 0 {
		return 0
	}
	return slices.Min(after)
}

// sidecarRecount is how often the status of a sidecar-mode collector
// recounts the pods it was injected into.
const sidecarRecount = time.Minute

// referencedAllocator returns the TargetAllocator the collector names with
// manifests.LabelTargetAllocator, or nil: it names none, or that one does not
// exist (the collector is reconciled again when it appears).
func (r *CollectorReconciler) referencedAllocator(ctx context.Context, c *v1beta1.OpenTelemetryCollector) (*v1alpha1.TargetAllocator, error) {
	name, owned := manifests.TargetAllocatorRef(c)
	if owned || !c.Spec.TargetAllocator.Enabled {
		return nil, nil
	}
	var ta v1alpha1.TargetAllocator
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &ta); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read target allocator %s: %w", name, err)
	}
	return &ta, nil
}

// allocatorConflict returns why the TargetAllocator a collector names with
// manifests.LabelTargetAllocator will not serve it, or "": the allocator is
// owned by another collector, or serves the first (by name) of several
// collectors naming it.
func (r *CollectorReconciler) allocatorConflict(ctx context.Context, c *v1beta1.OpenTelemetryCollector) (string, error) {
	name, owned := manifests.TargetAllocatorRef(c)
	if owned || !c.Spec.TargetAllocator.Enabled {
		return "", nil
	}
	var ta v1alpha1.TargetAllocator
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &ta)
	if client.IgnoreNotFound(err) != nil {
		return "", fmt.Errorf("read target allocator %s: %w", name, err)
	}
	if err == nil {
		if ref := metav1.GetControllerOf(&ta); ref != nil && ref.Kind == "OpenTelemetryCollector" && ref.Name != c.Name {
			return fmt.Sprintf("TargetAllocator %s belongs to collector %s and does not serve this one's pods", name, ref.Name), nil
		}
	}
	first, err := r.firstCollectorOf(ctx, c.Namespace, name)
	if err != nil {
		return "", err
	}
	if first != "" && first != c.Name {
		return fmt.Sprintf("TargetAllocator %s already serves collector %s (the first by name of those naming it) and does not serve this one's pods", name, first), nil
	}
	return "", nil
}

// firstCollectorOf is the collector a TargetAllocator not owned by a
// collector serves: the first by name of the enabled ones that name it.
func (r *CollectorReconciler) firstCollectorOf(ctx context.Context, namespace, taName string) (string, error) {
	var list v1beta1.OpenTelemetryCollectorList
	if err := r.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{manifests.LabelTargetAllocator: taName}); err != nil {
		return "", fmt.Errorf("list collectors of target allocator %s: %w", taName, err)
	}
	first := ""
	for _, o := range list.Items {
		if o.Spec.TargetAllocator.Enabled && o.DeletionTimestamp.IsZero() && (first == "" || o.Name < first) {
			first = o.Name
		}
	}
	return first, nil
}

// siblings maps a collector to the other collectors naming the same
// TargetAllocator.
func (r *CollectorReconciler) siblings(ctx context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[manifests.LabelTargetAllocator]
	if name == "" {
		return nil
	}
	var list v1beta1.OpenTelemetryCollectorList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingLabels{manifests.LabelTargetAllocator: name}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, c := range list.Items {
		if c.Name != o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
		}
	}
	return out
}

func (r *CollectorReconciler) apply(ctx context.Context, c *v1beta1.OpenTelemetryCollector, desired manifests.Collector) error {
	a := applier{client: r.Client, scheme: r.Scheme, memo: &r.memo}
	for _, obj := range desired.Objects {
		if err := a.apply(ctx, c, obj); err != nil {
			return err
		}
	}
	keep, err := names(r.Scheme, desired.Objects)
	if err != nil {
		return err
	}
	current := ""
	if cms := keep[corev1.SchemeGroupVersion.WithKind("ConfigMap")]; len(cms) > 0 {
		_, current, _ = strings.Cut(cms[0], "/")
	}
	versions, err := r.configVersionsToKeep(ctx, c, current)
	if err != nil {
		return err
	}
	kinds, err := r.pruneKinds()
	if err != nil {
		return err
	}
	if err := a.prune(ctx, c, c.Namespace, instanceSelector(c.Namespace, c.Name), kinds, keep,
		func(m metav1.PartialObjectMetadata) bool { return versions[m.Name] }); err != nil {
		return err
	}
	return r.pruneOtherModes(ctx, c)
}

// pruneOtherModes deletes the collector's workload of a mode other than its
// own (the mode cannot change, but an older operator may have left one).
// The list-based prune finds it too, through the metadata cache; this reads
// the kind's own cache, the one whose event triggered the reconcile, so a
// stray workload is gone after the first reconcile it causes.
func (r *CollectorReconciler) pruneOtherModes(ctx context.Context, c *v1beta1.OpenTelemetryCollector) error {
	key := client.ObjectKey{Namespace: c.Namespace, Name: manifests.CollectorName(c.Name)}
	for mode, obj := range map[v1beta1.Mode]client.Object{
		v1beta1.ModeStatefulSet: &appsv1.StatefulSet{},
		v1beta1.ModeDeployment:  &appsv1.Deployment{},
		v1beta1.ModeDaemonSet:   &appsv1.DaemonSet{},
	} {
		if mode == manifests.ModeOf(c) {
			continue
		}
		if err := r.Client.Get(ctx, key, obj); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("read %T %s: %w", obj, key.Name, err)
			}
			continue
		}
		if !metav1.IsControlledBy(obj, c) {
			continue
		}
		if err := r.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("prune %T %s of another mode: %w", obj, key.Name, err)
		}
	}
	return nil
}

// configVersionsToKeep returns the collector ConfigMaps kept for rollback:
// the current one and the newest configVersions-1 others, so there are never
// more than configVersions (the cache may not hold the current one yet).
func (r *CollectorReconciler) configVersionsToKeep(ctx context.Context, c *v1beta1.OpenTelemetryCollector, current string) (map[string]bool, error) {
	var list corev1.ConfigMapList
	sel := manifests.SelectorLabels(c.Namespace, c.Name, manifests.ComponentCollector)
	if err := r.Client.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingLabels(sel)); err != nil {
		return nil, fmt.Errorf("list collector config maps: %w", err)
	}
	var cms []corev1.ConfigMap
	for _, cm := range list.Items {
		if metav1.IsControlledBy(&cm, c) && cm.Name != current {
			cms = append(cms, cm)
		}
	}
	// Newest first.
	slices.SortFunc(cms, func(a, b corev1.ConfigMap) int {
		if d := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); d != 0 {
			return d
		}
		return strings.Compare(b.Name, a.Name)
	})
	n := 3
	if c.Spec.ConfigVersions != nil {
		n = int(*c.Spec.ConfigVersions)
	}
	keep := map[string]bool{current: true}
	for i, cm := range cms {
		if i < n-1 {
			keep[cm.Name] = true
		}
	}
	return keep, nil
}

// observe fills the scale status from the workload of the collector's mode:
// the replicas a Deployment or StatefulSet wants and has ready, the pods a
// DaemonSet should run and has ready, or the pods a sidecar-mode collector
// was injected into.
func (r *CollectorReconciler) observe(ctx context.Context, c *v1beta1.OpenTelemetryCollector, desired manifests.Collector) error {
	key := client.ObjectKey{Namespace: c.Namespace, Name: manifests.CollectorName(c.Name)}
	var want, ready int32
	var pod *corev1.PodSpec
	switch manifests.ModeOf(c) {
	case v1beta1.ModeStatefulSet:
		var sts appsv1.StatefulSet
		if err := r.Client.Get(ctx, key, &sts); err != nil {
			return fmt.Errorf("read statefulset: %w", err)
		}
		want, ready, pod = ptr.Deref(sts.Spec.Replicas, 1), sts.Status.ReadyReplicas, &sts.Spec.Template.Spec
	case v1beta1.ModeDeployment:
		var d appsv1.Deployment
		if err := r.Client.Get(ctx, key, &d); err != nil {
			return fmt.Errorf("read deployment: %w", err)
		}
		want, ready, pod = ptr.Deref(d.Spec.Replicas, 1), d.Status.ReadyReplicas, &d.Spec.Template.Spec
	case v1beta1.ModeDaemonSet:
		var ds appsv1.DaemonSet
		if err := r.Client.Get(ctx, key, &ds); err != nil {
			return fmt.Errorf("read daemonset: %w", err)
		}
		want, ready, pod = ds.Status.DesiredNumberScheduled, ds.Status.NumberReady, &ds.Spec.Template.Spec
	case v1beta1.ModeSidecar:
		n, err := r.injectedPods(ctx, c, desired.Selector)
		if err != nil {
			return err
		}
		want, ready = n, n
		c.Status.Image = c.Spec.Image
		if c.Status.Image == "" {
			c.Status.Image = r.Settings.CollectorImage
		}
		c.Status.Version = imageVersion(c.Status.Image)
	}
	c.Status.Scale = v1beta1.ScaleSubresourceStatus{
		Selector:       labels.SelectorFromSet(desired.Selector).String(),
		Replicas:       want,
		StatusReplicas: fmt.Sprintf("%d/%d", ready, want),
	}
	if pod != nil && len(pod.Containers) > 0 {
		c.Status.Image = pod.Containers[0].Image
		c.Status.Version = imageVersion(c.Status.Image)
	}
	return nil
}

// injectedPods counts the pods the webhook injected a sidecar-mode collector
// into, read from the API server (the operator caches no pods) as metadata
// only; 0 when the reconciler has no PodReader.
func (r *CollectorReconciler) injectedPods(ctx context.Context, c *v1beta1.OpenTelemetryCollector, selector map[string]string) (int32, error) {
	if r.PodReader == nil {
		return 0, nil
	}
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := r.PodReader.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingLabels(selector)); err != nil {
		return 0, fmt.Errorf("list injected pods: %w", err)
	}
	n := 0
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() {
			n++
		}
	}
	return int32(n), nil
}

// versionTag matches image tags that are versions: 0.165.0, v1.2.3-rc.1.
var versionTag = regexp.MustCompile(`^v?([0-9]+\.[0-9]+\.[0-9]+(?:[-+][0-9A-Za-z.+-]*)?)$`)

// imageVersion returns the version an image's tag names, without a leading
// "v"; "" when the image has no tag or its tag is not a version (latest, a
// digest only).
func imageVersion(image string) string {
	image, _, _ = strings.Cut(image, "@") // a digest
	name := image[strings.LastIndex(image, "/")+1:]
	_, tag, ok := strings.Cut(name, ":")
	if !ok {
		return ""
	}
	if m := versionTag.FindStringSubmatch(tag); m != nil {
		return m[1]
	}
	return ""
}
