package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/manifests"
)

// TestUninstall: once the operator is gone, a TargetAllocator it granted
// rights in another namespace keeps a finalizer nobody removes, so deleting
// it (or its namespace) hangs. Uninstall, what the chart's pre-delete hook
// runs, scales the operator's Deployment to zero, deletes those grants and
// removes the finalizer; the allocator itself stays, and deleting it then
// completes without an operator.
func TestUninstall(t *testing.T) {
	t.Parallel()
	const ns, other = "uninstall", "uninstall-other"
	s := settings
	s.GrantNamespaces = []string{ns}
	stop, stopOperator := context.WithCancel(context.Background())
	defer stopOperator()
	stopped := make(chan struct{})
	h := startWith(t, managerOptions{namespaces: []string{ns, other}, settings: &s, stop: stop, stopped: stopped})
	installRBAC(t, h, "targetallocator_secret_reader.yaml", "")
	ctx := t.Context()
	_, err := h.createYAML(t, ns, `
apiVersion: opentelemetry.io/v1alpha1
kind: TargetAllocator
metadata: {name: granted}
spec:
  prometheusCR:
    enabled: true
    allowNamespaces: [uninstall, uninstall-other]
`)
	require.NoError(t, err)
	key := types.NamespacedName{Namespace: ns, Name: "granted"}
	foreign := func() ([]rbacv1.RoleBinding, error) {
		var list rbacv1.RoleBindingList
		err := h.client.List(ctx, &list, client.InNamespace(other), client.MatchingLabels{manifests.LabelInstance: manifests.InstanceLabel(ns, "granted")})
		return list.Items, err
	}
	eventually(t, waitFor, func() error {
		var ta v1alpha1.TargetAllocator
		if err := h.client.Get(ctx, key, &ta); err != nil {
			return err
		}
		if !controllerutil.ContainsFinalizer(&ta, controller.ClusterRBACFinalizer) {
			return fmt.Errorf("no finalizer yet")
		}
		rbs, err := foreign()
		if err != nil || len(rbs) == 0 {
			return fmt.Errorf("no RoleBinding in %s yet (%w)", other, err)
		}
		return nil
	})

	// The operator's Deployment, as the chart installs it; it is scaled to
	// zero first. (Its pods, which no kubelet runs here, are the manager
	// of this test, stopped by hand.)
	op := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shardwise-operator"}}
	op.Spec.Replicas = ptr.To(int32(2))
	op.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "operator"}}
	op.Spec.Template.Labels = map[string]string{"app": "operator"}
	op.Spec.Template.Spec.Containers = []corev1.Container{{Name: "operator", Image: "operator"}}
	require.NoError(t, h.client.Create(ctx, op))
	stopOperator()
	<-stopped

	// Only this test's namespace: the control plane is shared with tests
	// whose allocators must keep their finalizers.
	released, err := controller.Uninstall(ctx, h.client, h.scheme, []string{ns}, client.ObjectKeyFromObject(op), 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, 1, released)
	require.NoError(t, h.client.Get(ctx, client.ObjectKeyFromObject(op), op))
	require.Equal(t, int32(0), *op.Spec.Replicas, "the operator is scaled to zero before anything is released")
	var ta v1alpha1.TargetAllocator
	require.NoError(t, h.client.Get(ctx, key, &ta))
	require.NotContains(t, ta.Finalizers, controller.ClusterRBACFinalizer)
	rbs, err := foreign()
	require.NoError(t, err)
	require.Empty(t, rbs, "the grants outside the allocator's namespace are deleted")

	// Again: nothing left to release.
	released, err = controller.Uninstall(ctx, h.client, h.scheme, []string{ns}, client.ObjectKeyFromObject(op), 10*time.Second)
	require.NoError(t, err)
	require.Zero(t, released)

	// Without an operator, the allocator is deleted at once.
	require.NoError(t, h.client.Delete(ctx, &ta))
	eventually(t, waitFor, func() error {
		err := h.client.Get(ctx, key, &ta)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %w (finalizers %v)", err, ta.Finalizers)
	})
}
