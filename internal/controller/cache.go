package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/internal/manifests"
)

// CacheByObject restricts the manager's informers for the kinds the
// reconcilers own to the objects the operator built (label
// app.kubernetes.io/managed-by=opentelemetry-operator), so the operator does not
// hold every ConfigMap, Service and StatefulSet of the cluster in memory. Use
// it as cache.Options.ByObject.
//
// Only kinds that no other part of the operator reads unfiltered are listed.
// The pod webhook resolves a pod's owner chain through ReplicaSets and Jobs
// only (it reads no Deployment or DaemonSet), so the collector's workload
// kinds can be restricted. Whoever adds a reader of a listed kind that needs
// objects the operator did not build must either read it with the manager's
// API reader (mgr.GetAPIReader()) or remove the kind here; Pods, ReplicaSets
// and Namespaces are deliberately absent.
//
// The label is no boundary: anyone who may create ConfigMaps in a namespace
// can put it on theirs. So what is cached of these kinds is only what the
// operator reads back (CacheTransform): a tenant's thousands of labelled
// 1 MiB ConfigMaps cost the operator their metadata, not their data.
func CacheByObject() map[client.Object]cache.ByObject {
	owned := labels.SelectorFromSet(labels.Set{manifests.LabelManagedBy: manifests.ManagedBy})
	out := map[client.Object]cache.ByObject{}
	for _, o := range []client.Object{
		&corev1.ConfigMap{}, &corev1.Service{}, &corev1.ServiceAccount{},
		&appsv1.StatefulSet{}, &appsv1.Deployment{}, &appsv1.DaemonSet{},
		&policyv1.PodDisruptionBudget{}, &autoscalingv2.HorizontalPodAutoscaler{}, &networkingv1.Ingress{}, &networkingv1.NetworkPolicy{},
		&rbacv1.Role{}, &rbacv1.RoleBinding{}, &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{},
	} {
		out[o] = cache.ByObject{Label: owned, Transform: CacheTransform}
	}
	return out
}

// CacheTransform drops from an object about to be cached what no reader in
// the operator looks at: managed fields and the last-applied annotation of
// every kind, and a ConfigMap's data. The applier compares a live object's
// UID, generation or resourceVersion, labels and annotations with what it
// applied (applier.unchanged), never its content, so an edited ConfigMap
// still gets a new resourceVersion and is put back. Whoever reads a cached
// ConfigMap's data must read it with the API reader instead.
func CacheTransform(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil // a tombstone (DeletedFinalStateUnknown): kept as it is
	}
	o.SetManagedFields(nil)
	if a := o.GetAnnotations(); a[corev1.LastAppliedConfigAnnotation] != "" {
		delete(a, corev1.LastAppliedConfigAnnotation)
		o.SetAnnotations(a)
	}
	if cm, ok := o.(*corev1.ConfigMap); ok {
		cm.Data, cm.BinaryData = nil, nil
	}
	return o, nil
}
