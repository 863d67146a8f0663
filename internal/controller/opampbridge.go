package controller

import (
	"context"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/manifests/opampbridge"
)

// OpAMPBridgeClusterRBACFinalizer is set on an OpAMPBridge while
// cluster-scoped RBAC exists for it: a namespaced owner cannot
// garbage-collect cluster objects.
const OpAMPBridgeClusterRBACFinalizer = "opentelemetry.io/shardwise-opamp-bridge-cluster-rbac"

// The operator grants the bridge what opampbridge.Rules lists, so it must
// hold those permissions itself (RBAC escalation prevention).
// +kubebuilder:rbac:groups=opentelemetry.io,resources=opampbridges,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=opentelemetry.io,resources=opampbridges/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=opentelemetry.io,resources=opampbridges/finalizers,verbs=update
// +kubebuilder:rbac:groups=opentelemetry.io,resources=opentelemetrycollectors,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=configmaps;services;serviceaccounts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings;clusterroles;clusterrolebindings,verbs=get;list;watch;create;update;patch;delete

// OpAMPBridgeReconciler reconciles an OpAMPBridge into its objects.
type OpAMPBridgeReconciler struct {
	Client   client.Client
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
	// Image is the bridge image for resources that name none.
	Image string
	// ClusterWideNamespaces are the namespaces whose bridges get a
	// ClusterRole over the collectors and pods of every namespace; a bridge
	// elsewhere gets a Role in its own namespace. Empty: no cluster-wide
	// bridge. The operator's administrator opts in with a flag.
	ClusterWideNamespaces []string
}

var _ reconcile.Reconciler = (*OpAMPBridgeReconciler)(nil)

var bridgeKinds = []schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
	corev1.SchemeGroupVersion.WithKind("Service"),
	appsv1.SchemeGroupVersion.WithKind("Deployment"),
	rbacv1.SchemeGroupVersion.WithKind("Role"),
	rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
	networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"),
}

var bridgeClusterKinds = []schema.GroupVersionKind{
	rbacv1.SchemeGroupVersion.WithKind("ClusterRole"),
	rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
}

// SetupWithManager registers the reconciler.
func (r *OpAMPBridgeReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.OpAMPBridge{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.Deployment{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Owns(&networkingv1.NetworkPolicy{}).
		// A cluster-wide bridge's ClusterRole and binding cannot be owned:
		// watched through their owner annotation, so an edit is put back.
		Watches(&rbacv1.ClusterRole{}, handler.EnqueueRequestsFromMapFunc(annotatedOwner(opampbridge.Component))).
		Watches(&rbacv1.ClusterRoleBinding{}, handler.EnqueueRequestsFromMapFunc(annotatedOwner(opampbridge.Component))).
		WithOptions(opts).
		Named("opampbridge").
		Complete(r)
}

// Reconcile builds the bridge's objects from a full read of the resource,
// applies them and prunes the rest.
func (r *OpAMPBridgeReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var b v1alpha1.OpAMPBridge
	if err := r.Client.Get(ctx, req.NamespacedName, &b); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, r.clusterRBAC().finalize(ctx, &b)
	}
	st := bridgeStatus(&b)
	return reporter{client: r.Client, recorder: r.Recorder}.finish(ctx, st, r.reconcile(ctx, &b))
}

// reconcile builds and applies the bridge's objects.
func (r *OpAMPBridgeReconciler) reconcile(ctx context.Context, b *v1alpha1.OpAMPBridge) outcome {
	settings := opampbridge.Settings{Image: r.Image, ClusterWide: slices.Contains(r.ClusterWideNamespaces, b.Namespace)}
	desired, err := opampbridge.Build(b, settings)
	if err != nil {
		return invalid(ReasonInvalidConfig, "build opamp bridge", err)
	}
	a := applier{client: r.Client, scheme: r.Scheme}
	if err := a.sync(ctx, b, desired.Objects, bridgeKinds, nil); err != nil {
		return applyFailed(err)
	}
	if err := r.clusterRBAC().sync(ctx, b, desired.ClusterObjects); err != nil {
		return applyFailed(err)
	}
	b.Status.Version = imageVersion(desired.Image)
	return ready("every desired object is applied")
}

func (r *OpAMPBridgeReconciler) clusterRBAC() clusterRBAC {
	return clusterRBAC{
		applier:   applier{client: r.Client, scheme: r.Scheme},
		finalizer: OpAMPBridgeClusterRBACFinalizer, kinds: bridgeClusterKinds, kind: "opamp bridge", component: opampbridge.Component,
	}
}
