package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/manifests/opampbridge"
)

// Uninstall lets go of what the operator holds on the resources it
// reconciles, for when it is uninstalled while they stay: every
// TargetAllocator and OpAMPBridge that carries the operator's finalizer loses
// the RBAC granted on its behalf outside its namespace (nothing else would
// delete it) and then the finalizer, so that deleting such a resource, or
// its namespace, later does not wait forever for an operator that is gone.
// The resources and the objects they own are left as they are.
//
// A running operator would put both back at its next reconcile, so the
// operator's Deployment (stop, when its name is set) is first scaled to zero
// and its pods waited for, up to wait. Only the namespaces given are looked
// at (an operator with --watch-namespace holds no rights elsewhere); none
// means every one. It returns how many resources it released.
func Uninstall(ctx context.Context, c client.Client, scheme *runtime.Scheme, namespaces []string, stop types.NamespacedName, wait time.Duration) (int, error) {
	if stop.Name != "" {
		if err := stopDeployment(ctx, c, stop, wait); err != nil {
			return 0, err
		}
	}
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	released := 0
	var errs []error
	for _, ns := range namespaces {
		n, err := release(ctx, c, scheme, ns)
		released += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return released, errors.Join(errs...)
}

// release releases the TargetAllocators, OpAMPBridges and collectors of namespace ns
// (every namespace for metav1.NamespaceAll).
func release(ctx context.Context, c client.Client, scheme *runtime.Scheme, ns string) (int, error) {
	a := applier{client: c, scheme: scheme}
	released := 0
	var errs []error
	var tas v1alpha1.TargetAllocatorList
	if err := c.List(ctx, &tas, client.InNamespace(ns)); err != nil {
		return 0, fmt.Errorf("list target allocators: %w", err)
	}
	rbac := clusterRBAC{applier: a, finalizer: ClusterRBACFinalizer, kinds: allocatorForeignKinds, kind: "target allocator", component: manifests.ComponentTargetAllocator}
	for i := range tas.Items {
		if controllerutil.ContainsFinalizer(&tas.Items[i], ClusterRBACFinalizer) {
			if err := rbac.finalize(ctx, &tas.Items[i]); err != nil {
				errs = append(errs, fmt.Errorf("release target allocator %s/%s: %w", tas.Items[i].Namespace, tas.Items[i].Name, err))
				continue
			}
			released++
		}
	}
	var bridges v1alpha1.OpAMPBridgeList
	if err := c.List(ctx, &bridges, client.InNamespace(ns)); err != nil {
		return released, errors.Join(append(errs, fmt.Errorf("list opamp bridges: %w", err))...)
	}
	rbac = clusterRBAC{applier: a, finalizer: OpAMPBridgeClusterRBACFinalizer, kinds: bridgeClusterKinds, kind: "opamp bridge", component: opampbridge.Component}
	for i := range bridges.Items {
		if controllerutil.ContainsFinalizer(&bridges.Items[i], OpAMPBridgeClusterRBACFinalizer) {
			if err := rbac.finalize(ctx, &bridges.Items[i]); err != nil {
				errs = append(errs, fmt.Errorf("release opamp bridge %s/%s: %w", bridges.Items[i].Namespace, bridges.Items[i].Name, err))
				continue
			}
			released++
		}
	}
	var collectors v1beta1.OpenTelemetryCollectorList
	if err := c.List(ctx, &collectors, client.InNamespace(ns)); err != nil {
		return released, errors.Join(append(errs, fmt.Errorf("list collectors: %w", err))...)
	}
	rbac = collectorClusterRBAC(a)
	for i := range collectors.Items {
		if controllerutil.ContainsFinalizer(&collectors.Items[i], CollectorClusterRBACFinalizer) {
			if err := rbac.finalize(ctx, &collectors.Items[i]); err != nil {
				errs = append(errs, fmt.Errorf("release collector %s/%s: %w", collectors.Items[i].Namespace, collectors.Items[i].Name, err))
				continue
			}
			released++
		}
	}
	return released, errors.Join(errs...)
}

// stopDeployment scales the Deployment to zero and waits, up to timeout,
// until it reports no replicas; one that does not exist is stopped.
func stopDeployment(ctx context.Context, c client.Client, key types.NamespacedName, timeout time.Duration) error {
	var d appsv1.Deployment
	if err := c.Get(ctx, key, &d); err != nil {
		return ignoreNotFound(err)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 0 {
		patch := client.MergeFrom(d.DeepCopy())
		zero := int32(0)
		d.Spec.Replicas = &zero
		if err := c.Patch(ctx, &d, patch); err != nil {
			return fmt.Errorf("scale the operator %s to zero: %w", key, err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, &d); err != nil {
			return apierrors.IsNotFound(err), ignoreNotFound(err)
		}
		return d.Status.Replicas == 0, nil
	})
	if err != nil {
		return fmt.Errorf("wait for the operator %s to stop: %w", key, err)
	}
	return nil
}
