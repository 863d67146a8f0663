package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
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
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=patch
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
	a := applier{client: r.Client, scheme: r.Scheme}
	sel := instanceSelector(b.Namespace, b.Name)
	if !b.DeletionTimestamp.IsZero() {
		if err := a.prune(ctx, nil, "", sel, bridgeClusterKinds, nil, nil); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, r.setFinalizer(ctx, &b, false)
	}
	before := b.Status.DeepCopy()

	settings := opampbridge.Settings{Image: r.Image, ClusterWide: slices.Contains(r.ClusterWideNamespaces, b.Namespace)}
	desired, err := opampbridge.Build(&b, settings)
	if err != nil {
		recordEvent(r.Recorder, &b, corev1.EventTypeWarning, ReasonInvalidConfig, err)
		setReady(&b.Status.Conditions, b.Generation, metav1.ConditionFalse, ReasonInvalidConfig, err.Error())
		b.Status.ObservedGeneration = b.Generation
		if serr := r.updateStatus(ctx, &b, before); serr != nil {
			return reconcile.Result{}, serr
		}
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("build opamp bridge: %w", err))
	}
	if err := r.apply(ctx, &b, desired); err != nil {
		recordEvent(r.Recorder, &b, corev1.EventTypeWarning, ReasonApplyFailed, err)
		setReady(&b.Status.Conditions, b.Generation, metav1.ConditionFalse, ReasonApplyFailed, err.Error())
		if serr := r.updateStatus(ctx, &b, before); serr != nil {
			return reconcile.Result{}, errors.Join(err, serr)
		}
		return reconcile.Result{}, err
	}
	b.Status.Version = imageVersion(desired.Image)
	setReady(&b.Status.Conditions, b.Generation, metav1.ConditionTrue, ReasonReconciled, "every desired object is applied")
	b.Status.ObservedGeneration = b.Generation
	return reconcile.Result{}, r.updateStatus(ctx, &b, before)
}

func (r *OpAMPBridgeReconciler) apply(ctx context.Context, b *v1alpha1.OpAMPBridge, desired opampbridge.Bridge) error {
	a := applier{client: r.Client, scheme: r.Scheme}
	if len(desired.ClusterObjects) > 0 {
		if err := r.setFinalizer(ctx, b, true); err != nil {
			return err
		}
	}
	for _, obj := range desired.Objects {
		if err := a.apply(ctx, b, obj); err != nil {
			return err
		}
	}
	for _, obj := range desired.ClusterObjects {
		if err := a.apply(ctx, nil, obj); err != nil {
			return err
		}
	}
	sel := instanceSelector(b.Namespace, b.Name)
	keep, err := names(r.Scheme, desired.Objects)
	if err != nil {
		return err
	}
	if err := a.prune(ctx, b, b.Namespace, sel, bridgeKinds, keep, nil); err != nil {
		return err
	}
	keepCluster, err := names(r.Scheme, desired.ClusterObjects)
	if err != nil {
		return err
	}
	if err := a.prune(ctx, nil, "", sel, bridgeClusterKinds, keepCluster, nil); err != nil {
		return err
	}
	if len(desired.ClusterObjects) == 0 {
		return r.setFinalizer(ctx, b, false)
	}
	return nil
}

// setFinalizer adds or removes OpAMPBridgeClusterRBACFinalizer, writing only on change.
func (r *OpAMPBridgeReconciler) setFinalizer(ctx context.Context, b *v1alpha1.OpAMPBridge, present bool) error {
	if controllerutil.ContainsFinalizer(b, OpAMPBridgeClusterRBACFinalizer) == present {
		return nil
	}
	if present {
		controllerutil.AddFinalizer(b, OpAMPBridgeClusterRBACFinalizer)
	} else {
		controllerutil.RemoveFinalizer(b, OpAMPBridgeClusterRBACFinalizer)
	}
	if err := r.Client.Update(ctx, b); ignoreNotFound(err) != nil {
		return fmt.Errorf("update opamp bridge finalizers: %w", err)
	}
	return nil
}

func (r *OpAMPBridgeReconciler) updateStatus(ctx context.Context, b *v1alpha1.OpAMPBridge, before *v1alpha1.OpAMPBridgeStatus) error {
	return updateStatus(ctx, r.Client, b, before, &b.Status, "opamp bridge")
}
