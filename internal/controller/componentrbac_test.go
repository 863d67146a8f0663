package controller_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/testenv"
)

// everyComponent uses every component that needs rights, with the options
// that need the most.
const everyComponent = `
receivers:
  k8s_cluster: {distribution: openshift}
  k8s_events: {}
  kubeletstats: {extra_metadata_labels: [container.id]}
  k8sobjects: {objects: [{name: pods, mode: watch}]}
  otlp: {protocols: {grpc: {}}}
processors:
  k8sattributes: {extract: {metadata: [k8s.deployment.name, k8s.node.name]}}
  resourcedetection: {detectors: [k8snode, openshift]}
exporters: {debug: {}}
extensions:
  k8s_observer: {observe_pods: true, observe_services: true, observe_nodes: true}
  k8sleaderelector: {lease_name: x}
service:
  extensions: [k8s_observer, k8sleaderelector]
  pipelines:
    metrics: {receivers: [k8s_cluster, k8s_events, kubeletstats, k8sobjects, otlp], processors: [k8sattributes, resourcedetection], exporters: [debug]}
`

// TestOperatorHoldsComponentRules: the operator's ClusterRole holds every
// right it grants a collector's components (the API server refuses a
// grant its creator does not hold), k8sobjects' arbitrary kinds aside.
func TestOperatorHoldsComponentRules(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "rbac", "role.yaml"))
	require.NoError(t, err)
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.Unmarshal(raw, &role))
	var cfg v1beta1.Config
	require.NoError(t, yaml.Unmarshal([]byte(everyComponent), &cfg))
	rules := manifests.CollectorComponentRules(cfg)
	require.Len(t, rules, 8, "every component of the config needs rights")
	for _, cr := range rules {
		for _, r := range append(cr.Cluster, cr.Namespaced...) {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						require.True(t, slices.ContainsFunc(role.Rules, func(h rbacv1.PolicyRule) bool {
							return slices.Contains(h.APIGroups, g) && slices.Contains(h.Resources, res) && slices.Contains(h.Verbs, v)
						}), "%s: operator lacks %s %s/%s", cr.Component, v, g, res)
					}
				}
			}
		}
	}
}

// TestComponentRBAC: a collector with k8sattributes, kubeletstats and
// k8sleaderelector, in a namespace the operator's administrator listed,
// gets a ClusterRole for the cluster-wide reads and a Role for the lease,
// bound to its ServiceAccount (SubjectAccessReviews show the rights), and
// ComponentRBAC=True; in a namespace not listed it gets nothing, and
// ComponentRBAC=False names the components and the flag; without the
// components the grants go; deleting the collector deletes its ClusterRole.
func TestComponentRBAC(t *testing.T) {
	t.Parallel()
	const granted, refused = "component-rbac", "component-rbac-refused"
	s := settings
	s.ComponentRBACNamespaces = []string{granted}
	h := startWith(t, managerOptions{namespaces: []string{granted, refused}, settings: &s})
	ctx := t.Context()
	const doc = `
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata: {name: agent}
spec:
  mode: daemonset
  config:
    receivers:
      kubeletstats: {auth_type: serviceAccount}
      otlp: {protocols: {grpc: {}}}
    processors:
      k8sattributes: {}
    exporters: {debug: {}}
    extensions:
      k8sleaderelector: {lease_name: agent}
    service:
      extensions: [k8sleaderelector]
      pipelines:
        metrics: {receivers: [kubeletstats, otlp], processors: [k8sattributes], exporters: [debug]}
`
	for _, ns := range []string{granted, refused} {
		_, err := h.createYAML(t, ns, doc)
		require.NoError(t, err)
	}
	condition := func(ns string) *metav1.Condition {
		var got *metav1.Condition
		eventually(t, waitFor, func() error {
			c := h.collector(t, ns, "agent")
			got = meta.FindStatusCondition(c.Status.Conditions, controller.ConditionComponentRBAC)
			if got == nil || got.ObservedGeneration != c.Generation {
				return fmt.Errorf("no %s condition of generation %d: %v", controller.ConditionComponentRBAC, c.Generation, c.Status.Conditions)
			}
			return nil
		})
		return got
	}
	sa := func(ns string) string { return "system:serviceaccount:" + ns + ":" + manifests.CollectorName("agent") }

	cond := condition(granted)
	require.Equal(t, metav1.ConditionTrue, cond.Status, cond.Message)
	name := manifests.CollectorRBACName(granted, "agent")
	var cr rbacv1.ClusterRole
	h.get(t, "", name, &cr)
	require.Contains(t, h.collector(t, granted, "agent").Finalizers, controller.CollectorClusterRBACFinalizer)
	eventually(t, waitFor, func() error {
		for _, q := range []struct{ verb, res, ns string }{{"list", "pods", "kube-system"}, {"get", "nodes/stats", ""}, {"list", "replicasets.apps", "default"}, {"update", "leases.coordination.k8s.io", granted}} {
			if !h.allowed(t, sa(granted), q.verb, q.res, q.ns) {
				return fmt.Errorf("the collector may not %s %s in %q", q.verb, q.res, q.ns)
			}
		}
		return nil
	})
	require.False(t, h.allowed(t, sa(granted), "update", "leases.coordination.k8s.io", "kube-system"), "the lease right is its namespace's only")

	cond = condition(refused)
	require.Equal(t, metav1.ConditionFalse, cond.Status)
	require.Equal(t, controller.ReasonRBACNotGranted, cond.Reason)
	require.Contains(t, cond.Message, "receivers/kubeletstats, processors/k8sattributes, extensions/k8sleaderelector need rights")
	require.Contains(t, cond.Message, "--collector-rbac-namespaces")
	requireWarningEvent(t, h, refused, "agent", controller.ReasonRBACNotGranted)
	err := h.client.Get(ctx, types.NamespacedName{Name: manifests.CollectorRBACName(refused, "agent")}, &rbacv1.ClusterRole{})
	require.True(t, apierrors.IsNotFound(err), "no ClusterRole for a namespace not listed: %v", err)
	require.False(t, h.allowed(t, sa(refused), "get", "nodes/stats", ""))

	// Without the components, the grants go.
	c := h.collector(t, granted, "agent")
	h.update(t, c, func() {
		c.Spec.Config = v1beta1.Config{}
		require.NoError(t, yaml.Unmarshal([]byte(`
receivers: {otlp: {protocols: {grpc: {}}}}
exporters: {debug: {}}
service: {pipelines: {traces: {receivers: [otlp], exporters: [debug]}}}
`), &c.Spec.Config))
	})
	eventually(t, waitFor, func() error {
		for _, o := range []client.Object{&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}} {
			if err := h.client.Get(ctx, types.NamespacedName{Name: name}, o); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T still there: %w", o, err)
			}
		}
		if err := h.client.Get(ctx, types.NamespacedName{Namespace: granted, Name: name}, &rbacv1.Role{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Role still there: %w", err)
		}
		if meta.FindStatusCondition(h.collector(t, granted, "agent").Status.Conditions, controller.ConditionComponentRBAC) != nil {
			return fmt.Errorf("condition still there")
		}
		return nil
	})

	// Deleting a collector deletes its ClusterRole.
	require.NoError(t, h.client.Delete(ctx, h.collector(t, refused, "agent")))
	c = h.collector(t, granted, "agent")
	h.update(t, c, func() { require.NoError(t, yaml.Unmarshal([]byte(doc), c)) })
	eventually(t, waitFor, func() error {
		return h.client.Get(ctx, types.NamespacedName{Name: name}, &rbacv1.ClusterRole{})
	})
	require.NoError(t, h.client.Delete(ctx, h.collector(t, granted, "agent")))
	eventually(t, 30*time.Second, func() error {
		if err := h.client.Get(ctx, types.NamespacedName{Name: name}, &rbacv1.ClusterRole{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ClusterRole still there: %w", err)
		}
		return nil
	})
}
