package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
	"github.com/shardwise/shardwise/internal/manifests"
)

// ClusterRBACFinalizer is set on a TargetAllocator while cluster-scoped RBAC
// exists for it: a namespaced owner cannot garbage-collect cluster objects.
const ClusterRBACFinalizer = "opentelemetry.io/shardwise-cluster-rbac"

// The operator grants the allocator these permissions in the allocator's
// namespace (RBAC lets it grant only what it holds), and Namespaces read
// cluster-wide. It holds no Secret permission: it binds the secret reader
// ClusterRole (config/rbac) instead, which RBAC allows through `bind`.
// +kubebuilder:rbac:groups="",resources=pods;endpoints;namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors;podmonitors;probes;scrapeconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings;clusterroles;clusterrolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=shardwise-targetallocator-secret-reader

// TargetAllocatorReconciler reconciles a TargetAllocator into its objects.
type TargetAllocatorReconciler struct {
	Client   client.Client
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
	Settings manifests.Settings

	// MonitoringRecheck is how often an allocator with
	// observability.metrics.enableMetrics looks again for
	// prometheus-operator's API when it was not served; zero means a minute.
	MonitoringRecheck time.Duration

	memo        applyMemo
	certManager certManagerAPI
	monitoring  monitoringAPI
}

var _ reconcile.Reconciler = (*TargetAllocatorReconciler)(nil)

var allocatorKinds = []schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
	corev1.SchemeGroupVersion.WithKind("Service"),
	appsv1.SchemeGroupVersion.WithKind("Deployment"),
	policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"),
	rbacv1.SchemeGroupVersion.WithKind("Role"),
	rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
	networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"),
}

// allocatorForeignKinds are the kinds of the objects an allocator cannot
// own: cluster-scoped RBAC, and RBAC in other namespaces.
var allocatorForeignKinds = []schema.GroupVersionKind{
	rbacv1.SchemeGroupVersion.WithKind("ClusterRole"),
	rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
	rbacv1.SchemeGroupVersion.WithKind("Role"),
	rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
}

// ReasonGrantNotAllowed is the Ready reason of an allocator that needs
// permissions outside its namespace which the operator may not grant.
const ReasonGrantNotAllowed = "GrantNotAllowed"

// SetupWithManager registers the reconciler. A collector change re-queues the
// allocator it uses, since the collector selector and scrape configs come from it.
func (r *TargetAllocatorReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	// Whether cert-manager objects may exist to prune; a failed look-up is
	// retried at the first reconcile that needs cert-manager.
	_, _ = r.certManager.installed(mgr.GetRESTMapper())
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.TargetAllocator{}, builder.WithPredicates(specChanged())).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.Deployment{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Watches(&v1beta1.OpenTelemetryCollector{}, handler.EnqueueRequestsFromMapFunc(collectorToAllocator), builder.WithPredicates(specChanged())).
		// The objects it cannot own are watched through AnnotationOwner, so a
		// deleted or edited ClusterRoleBinding is put back.
		Watches(&rbacv1.ClusterRole{}, handler.EnqueueRequestsFromMapFunc(annotatedOwner(manifests.ComponentTargetAllocator))).
		Watches(&rbacv1.ClusterRole{}, handler.EnqueueRequestsFromMapFunc(r.secretReaderUsers)).
		Watches(&rbacv1.ClusterRoleBinding{}, handler.EnqueueRequestsFromMapFunc(annotatedOwner(manifests.ComponentTargetAllocator))).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.readersOf), builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&rbacv1.Role{}, handler.EnqueueRequestsFromMapFunc(annotatedOwner(manifests.ComponentTargetAllocator))).
		Watches(&rbacv1.RoleBinding{}, handler.EnqueueRequestsFromMapFunc(annotatedOwner(manifests.ComponentTargetAllocator))).
		WithOptions(opts).
		Named("targetallocator").
		Complete(r)
}

func collectorToAllocator(_ context.Context, o client.Object) []reconcile.Request {
	c, ok := o.(*v1beta1.OpenTelemetryCollector)
	if !ok || !c.Spec.TargetAllocator.Enabled {
		return nil
	}
	name, _ := manifests.TargetAllocatorRef(c)
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: c.Namespace, Name: name}}}
}

// annotatedOwner maps an object of component carrying
// manifests.AnnotationOwner to the resource named there: the objects a
// namespaced resource cannot own (cluster-scoped, or in another namespace)
// are watched that way, so a deleted or edited one is put back.
func annotatedOwner(component string) handler.MapFunc {
	return func(_ context.Context, o client.Object) []reconcile.Request {
		ns, name, ok := strings.Cut(o.GetAnnotations()[manifests.AnnotationOwner], "/")
		if !ok || ns == "" || name == "" || o.GetLabels()[manifests.LabelManagedBy] != manifests.ManagedBy || o.GetLabels()[manifests.LabelComponent] != component {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}}
	}
}

// Reconcile builds the allocator's objects from a full read of the resource
// and of the collector it serves, applies them and prunes the rest.
func (r *TargetAllocatorReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var ta v1alpha1.TargetAllocator
	if err := r.Client.Get(ctx, req.NamespacedName, &ta); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !ta.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, r.clusterRBAC().finalize(ctx, &ta)
	}
	if ta.Spec.ManagementState == v1beta1.ManagementStateUnmanaged {
		return reconcile.Result{}, nil
	}
	st := allocatorStatus(&ta)
	o, err := r.reconcile(ctx, &ta)
	if err != nil {
		return reconcile.Result{}, err
	}
	return reporter{client: r.Client, recorder: r.Recorder}.finish(ctx, st, o)
}

// reconcile builds and applies the allocator's objects; an error is a
// failure before any verdict.
func (r *TargetAllocatorReconciler) reconcile(ctx context.Context, ta *v1alpha1.TargetAllocator) (outcome, error) {
	missing, err := r.certManager.certManagerMissing(r.Client, ta.Spec.Mtls, "spec.mtls")
	if err != nil {
		return outcome{}, err
	}
	if missing != "" {
		// An allocator whose server certificate nobody issues would never
		// start: keep the last good objects until cert-manager is installed.
		return degraded(ReasonCertManagerNotInstalled, missing).after(certManagerRecheck), nil
	}
	in, err := r.input(ctx, ta)
	if err != nil {
		return outcome{}, err
	}
	desired, err := manifests.BuildTargetAllocator(in, r.Settings)
	if err == nil {
		err = validateAllocatorConfig(desired)
	}
	if err != nil {
		reason := ReasonInvalidConfig
		if errors.Is(err, manifests.ErrGrantNotAllowed) {
			reason = ReasonGrantNotAllowed
			// Grants the operator may no longer give do not outlive the refusal.
			if perr := r.clusterRBAC().release(ctx, ta); perr != nil {
				return outcome{}, perr
			}
		}
		return invalid(reason, "build target allocator", err), nil
	}
	recheck := r.MonitoringRecheck
	if recheck <= 0 {
		recheck = defaultMonitoringRecheck
	}
	var missingMonitor string
	desired.Objects, missingMonitor, err = r.monitoring.dropUnserved(r.Client.RESTMapper(), desired.Objects, recheck)
	if err != nil {
		return outcome{}, err
	}
	if err := r.apply(ctx, ta, desired, recheck); err != nil {
		return applyFailed(err), nil
	}
	setMonitorCondition(r.Recorder, ta, &ta.Status.Conditions, ta.Spec.Observability.Metrics.EnableMetrics, missingMonitor,
		"ServiceMonitor "+manifests.TargetAllocatorName(ta.Name)+" is applied")
	for _, o := range desired.Objects {
		if d, ok := o.(*appsv1.Deployment); ok {
			ta.Status.Image = d.Spec.Template.Spec.Containers[0].Image
			ta.Status.Version = imageVersion(ta.Status.Image)
		}
	}
	missing, err = r.secretReaderMissing(ctx, desired)
	if err != nil {
		return outcome{}, err
	}
	if missing != "" {
		return degraded(ReasonSecretReaderMissing, missing).after(time.Minute), nil
	}
	if missingMonitor != "" {
		return ready("every desired object but the ServiceMonitor is applied (see the " + ConditionMetricsMonitor + " condition)").after(recheck), nil
	}
	if ta.Spec.Observability.Metrics.EnableMetrics {
		// Restore a ServiceMonitor deleted or edited by hand: the operator
		// does not watch prometheus-operator's kinds.
		return ready("every desired object is applied").after(monitorResync), nil
	}
	return ready("every desired object is applied"), nil
}

// ReasonSecretReaderMissing is the Ready reason of an allocator bound to the
// secret reader ClusterRole while that role is not installed.
const ReasonSecretReaderMissing = "SecretReaderRoleMissing"

// secretReaderMissing says why the allocator cannot read Secrets although
// it is bound to manifests.SecretReaderClusterRole: the role, installed with
// the operator (config/rbac), does not exist. "" when it exists or is unused.
func (r *TargetAllocatorReconciler) secretReaderMissing(ctx context.Context, desired manifests.TargetAllocator) (string, error) {
	used := false
	for _, o := range append(append([]client.Object{}, desired.Objects...), desired.ClusterObjects...) {
		if rb, ok := o.(*rbacv1.RoleBinding); ok && rb.RoleRef.Kind == "ClusterRole" && rb.RoleRef.Name == manifests.SecretReaderClusterRole {
			used = true
		}
	}
	if !used {
		return "", nil
	}
	err := r.Client.Get(ctx, client.ObjectKey{Name: manifests.SecretReaderClusterRole}, &rbacv1.ClusterRole{})
	switch {
	case err == nil:
		return "", nil
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("ClusterRole %s is not installed (config/rbac/targetallocator_secret_reader.yaml, labelled %s=%s): the allocator cannot read the Secrets and ConfigMaps its monitors reference",
			manifests.SecretReaderClusterRole, manifests.LabelManagedBy, manifests.ManagedBy), nil
	default:
		return "", fmt.Errorf("read ClusterRole %s: %w", manifests.SecretReaderClusterRole, err)
	}
}

// secretReaderUsers maps the secret reader ClusterRole to every
// TargetAllocator, so its installation clears their condition at once.
func (r *TargetAllocatorReconciler) secretReaderUsers(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetName() != manifests.SecretReaderClusterRole {
		return nil
	}
	var list v1alpha1.TargetAllocatorList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, ta := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&ta)})
	}
	return out
}

// optedIn lists the namespaces that let the allocators of ta's namespace
// read them (manifests.ReaderLabel), when ta asks for reads in other
// namespaces at all.
func (r *TargetAllocatorReconciler) optedIn(ctx context.Context, ta *v1alpha1.TargetAllocator) ([]string, error) {
	p := ta.Spec.PrometheusCR
	if !p.Enabled || (len(p.AllowNamespaces) == 0 && len(p.SecretNamespaces) == 0) {
		return nil, nil
	}
	var list corev1.NamespaceList
	if err := r.Client.List(ctx, &list, client.MatchingLabels{manifests.ReaderLabel(ta.Namespace): "true"}); err != nil {
		return nil, fmt.Errorf("list namespaces labelled %s=true: %w", manifests.ReaderLabel(ta.Namespace), err)
	}
	out := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		out = append(out, ns.Name)
	}
	return out, nil
}

// readersOf maps a namespace to the allocators of each namespace its
// manifests.ReaderLabel labels name, so setting or removing one grants or
// revokes at once. An update is mapped for the old and the new object, so a
// removed label reaches its allocators too.
func (r *TargetAllocatorReconciler) readersOf(ctx context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for k := range o.GetLabels() {
		reader, ok := strings.CutPrefix(k, manifests.LabelReaderPrefix)
		if !ok {
			continue
		}
		var list v1alpha1.TargetAllocatorList
		if err := r.Client.List(ctx, &list, client.InNamespace(reader)); err != nil {
			continue
		}
		for _, ta := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&ta)})
		}
	}
	return out
}

// input finds the collector the allocator serves: its owner, or else the
// collectors that name it with manifests.LabelTargetAllocator (the first by
// name). Without one, it selects the collector of its own name.
func (r *TargetAllocatorReconciler) input(ctx context.Context, ta *v1alpha1.TargetAllocator) (manifests.AllocatorInput, error) {
	in := manifests.AllocatorInput{
		TargetAllocator:   ta,
		CollectorSelector: manifests.SelectorLabels(ta.Namespace, ta.Name, manifests.ComponentCollector),
	}
	optedIn, err := r.optedIn(ctx, ta)
	if err != nil {
		return in, err
	}
	in.OptedIn = optedIn
	if ref := metav1.GetControllerOf(ta); ref != nil && ref.Kind == "OpenTelemetryCollector" {
		in.CollectorSelector = manifests.SelectorLabels(ta.Namespace, ref.Name, manifests.ComponentCollector)
		return in, nil
	}
	var list v1beta1.OpenTelemetryCollectorList
	if err := r.Client.List(ctx, &list, client.InNamespace(ta.Namespace), client.MatchingLabels{manifests.LabelTargetAllocator: ta.Name}); err != nil {
		return in, fmt.Errorf("list collectors of target allocator: %w", err)
	}
	slices.SortFunc(list.Items, func(a, b v1beta1.OpenTelemetryCollector) int { return strings.Compare(a.Name, b.Name) })
	for _, c := range list.Items {
		// The same choice as CollectorReconciler.firstCollectorOf, which
		// tells the others.
		if !c.Spec.TargetAllocator.Enabled || !c.DeletionTimestamp.IsZero() {
			continue
		}
		in.CollectorSelector = manifests.SelectorLabels(c.Namespace, c.Name, manifests.ComponentCollector)
		scs, err := manifests.ScrapeConfigs(c.Spec.Config)
		if err != nil {
			// The collector reports its own invalid config; serve the resource's jobs.
			break
		}
		in.ScrapeConfigs = scs
		break
	}
	return in, nil
}

func (r *TargetAllocatorReconciler) apply(ctx context.Context, ta *v1alpha1.TargetAllocator, desired manifests.TargetAllocator, recheck time.Duration) error {
	a := applier{client: r.Client, scheme: r.Scheme, memo: &r.memo}
	kinds := slices.Clone(allocatorKinds)
	if r.certManager.seen.Load() {
		kinds = append(kinds, certManagerKinds...)
	}
	served, err := r.monitoring.servedKinds(r.Client.RESTMapper(), monitorKinds[:1], recheck)
	if err != nil {
		return err
	}
	kinds = append(kinds, served...)
	if err := a.sync(ctx, ta, desired.Objects, kinds, nil); err != nil {
		return err
	}
	return r.clusterRBAC().sync(ctx, ta, desired.ClusterObjects)
}

// validateAllocatorConfig parses the rendered targetallocator.yaml with the
// allocator's own parser (allocatorconfig.Parse, strict on every key; the
// strategy names are the schema's to check), so a config the allocator
// would refuse (duplicate job names, a broken scrape config) is reported
// here, and the last good objects stay.
func validateAllocatorConfig(desired manifests.TargetAllocator) error {
	for _, o := range desired.Objects {
		cm, ok := o.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		rendered, ok := cm.Data[manifests.TargetAllocatorConfigKey]
		if !ok {
			continue
		}
		if _, err := allocatorconfig.Parse([]byte(rendered)); err != nil {
			return fmt.Errorf("the allocator would refuse its config: %w", err)
		}
	}
	return nil
}

func (r *TargetAllocatorReconciler) clusterRBAC() clusterRBAC {
	return clusterRBAC{
		applier:   applier{client: r.Client, scheme: r.Scheme, memo: &r.memo},
		finalizer: ClusterRBACFinalizer, kinds: allocatorForeignKinds, kind: "target allocator", component: manifests.ComponentTargetAllocator,
	}
}
