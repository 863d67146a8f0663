package controller

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests"
)

// The rights a collector's components need (manifests.CollectorComponentRules),
// which the operator must hold to grant: what upstream's components ask for.
// +kubebuilder:rbac:groups="",resources=events;namespaces;namespaces/status;nodes;nodes/spec;persistentvolumeclaims;persistentvolumes;pods;pods/status;replicationcontrollers;replicationcontrollers/status;resourcequotas;services,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes/stats;nodes/proxy,verbs=get
// +kubebuilder:rbac:groups=apps,resources=daemonsets;deployments;replicasets;statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=extensions,resources=daemonsets;deployments;replicasets,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs;cronjobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=config.openshift.io,resources=infrastructures;infrastructures/status,verbs=get;list;watch
// +kubebuilder:rbac:groups=quota.openshift.io,resources=clusterresourcequotas,verbs=get;list;watch

// CollectorClusterRBACFinalizer is set on a collector while its components'
// ClusterRole and binding exist, so that deleting it deletes them.
const CollectorClusterRBACFinalizer = "opentelemetry.io/shardwise-collector-cluster-rbac"

// ConditionComponentRBAC reports, for a collector whose components need
// rights from the API server (k8sattributes, kubeletstats, k8s_cluster,
// ...), whether the operator granted them. Absent when none need any.
const ConditionComponentRBAC = "ComponentRBAC"

// Reasons of ConditionComponentRBAC.
const (
	ReasonRBACGranted    = "Granted"
	ReasonRBACNotGranted = "NotGranted"
	ReasonRBACFailed     = "GrantFailed"
)

var collectorClusterKinds = []schema.GroupVersionKind{
	rbacv1.SchemeGroupVersion.WithKind("ClusterRole"),
	rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
}

func collectorClusterRBAC(a applier) clusterRBAC {
	return clusterRBAC{applier: a, finalizer: CollectorClusterRBACFinalizer, kinds: collectorClusterKinds, kind: "collector", component: manifests.ComponentCollector}
}

// grantComponents applies the collector's components' cluster-wide RBAC
// (or removes it when none is wanted) and records ConditionComponentRBAC.
// A failure (the API server refuses a grant the operator does not hold, a
// k8sobjects receiver of some kind) is the condition, not the collector's
// Ready: everything else runs.
func (r *CollectorReconciler) grantComponents(ctx context.Context, c *v1beta1.OpenTelemetryCollector, desired manifests.Collector) {
	err := collectorClusterRBAC(applier{client: r.Client, scheme: r.Scheme, memo: &r.memo}).sync(ctx, c, desired.ClusterObjects)
	cond := metav1.Condition{Type: ConditionComponentRBAC, ObservedGeneration: c.Generation}
	switch {
	case err != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonRBACFailed, err.Error()
	case desired.ComponentRBACNotGranted != "":
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonRBACNotGranted, desired.ComponentRBACNotGranted
	case len(manifests.CollectorComponentRules(c.Spec.Config)) == 0 || manifests.ModeOf(c) == v1beta1.ModeSidecar:
		meta.RemoveStatusCondition(&c.Status.Conditions, ConditionComponentRBAC)
		return
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, ReasonRBACGranted, "the rights the components need are granted to the collector's ServiceAccount"
	}
	if cond.Status == metav1.ConditionFalse {
		warnIfNews(r.Recorder, c, c.Status.Conditions, ConditionComponentRBAC, cond.Reason, cond.Message)
	}
	meta.SetStatusCondition(&c.Status.Conditions, cond)
}
