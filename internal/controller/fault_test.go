package controller_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/testenv"
)

// faultCollector is the collector of the fault tests: one config version
// kept, so an extra ConfigMap would show.
var faultCollector = strings.Replace(upstreamExample, "  mode: statefulset\n", "  mode: statefulset\n  configVersions: 1\n", 1)

const faultName = "collector-with-ta"

// operator is a freshly started operator's reconcilers over a client.
type operator struct {
	col *controller.CollectorReconciler
	ta  *controller.TargetAllocatorReconciler
}

func newOperator(c client.Client, h harness) operator {
	return operator{
		col: &controller.CollectorReconciler{Client: c, Scheme: h.scheme, Settings: settings},
		ta:  &controller.TargetAllocatorReconciler{Client: c, Scheme: h.scheme, Settings: settings},
	}
}

// pass runs one full reconcile of the collector and then of its allocator.
func (o operator) pass(ctx context.Context, ns string) error {
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: faultName}}
	_, err1 := o.col.Reconcile(ctx, req)
	_, err2 := o.ta.Reconcile(ctx, req)
	return errors.Join(err1, err2)
}

// pass is one full reconcile by a freshly started operator.
func pass(ctx context.Context, c client.Client, h harness, ns string) error {
	return newOperator(c, h).pass(ctx, ns)
}

// converge restarts the operator and reconciles until a pass writes nothing,
// failing the test after 10 passes.
func converge(t *testing.T, h harness, ns string) {
	t.Helper()
	var log writeLog
	op := newOperator(log.wrap(h.client), h)
	for range 10 {
		log.reset()
		err := op.pass(t.Context(), ns)
		if err == nil && len(log.snapshot()) == 0 {
			return
		}
	}
	require.FailNow(t, "no convergence after 10 reconciles", "%s: %v", ns, log.snapshot())
}

// changeConfig edits the collector's exporter, which renders a new ConfigMap.
func changeConfig(t *testing.T, h harness, ns string) {
	t.Helper()
	c := h.collector(t, ns, faultName)
	h.update(t, c, func() { c.Spec.Config.Exporters.Object["debug"] = map[string]any{"verbosity": "detailed"} })
}

// objectsOf renders every object the operator built in ns, with what differs
// between namespaces (UIDs, versions, timestamps, the namespace itself) left
// out, keyed by kind and name.
func objectsOf(t *testing.T, h harness, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	sel := client.MatchingLabels{manifests.LabelManagedBy: manifests.ManagedBy}
	for _, list := range []client.ObjectList{
		&corev1.ConfigMapList{}, &corev1.ServiceAccountList{}, &corev1.ServiceList{}, &appsv1.StatefulSetList{},
		&appsv1.DeploymentList{}, &policyv1.PodDisruptionBudgetList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{},
		&v1alpha1.TargetAllocatorList{},
	} {
		require.NoError(t, h.client.List(t.Context(), list, client.InNamespace(ns), sel))
		b, err := json.Marshal(list)
		require.NoError(t, err)
		var items struct {
			Items []map[string]any `json:"items"`
		}
		require.NoError(t, json.Unmarshal(b, &items))
		for _, item := range items.Items {
			md := item["metadata"].(map[string]any)
			name := md["name"].(string)
			refs, _ := md["ownerReferences"].([]any)
			for _, r := range refs {
				delete(r.(map[string]any), "uid")
			}
			item["metadata"] = map[string]any{"labels": md["labels"], "annotations": md["annotations"], "ownerReferences": refs}
			delete(item, "status")
			if spec, ok := item["spec"].(map[string]any); ok {
				delete(spec, "clusterIP")
				delete(spec, "clusterIPs")
				// The allocator config names its namespace, so its hash
				// differs between namespaces; the ConfigMaps are compared.
				if tmpl, ok := spec["template"].(map[string]any); ok && item["kind"] != "StatefulSet" {
					if a, ok := tmpl["metadata"].(map[string]any)["annotations"].(map[string]any); ok && a[manifests.AnnotationConfigHash] != nil {
						a[manifests.AnnotationConfigHash] = "set"
					}
				}
			}
			b, err := json.Marshal(item)
			require.NoError(t, err)
			out[fmt.Sprintf("%T/%s", list, name)] = strings.ReplaceAll(string(b), ns, "NS")
		}
	}
	return out
}

// requireOwnersExist checks that no object the operator built in ns is an
// orphan: each has a controller that exists.
func requireOwnersExist(t *testing.T, h harness, ns string) {
	t.Helper()
	for _, list := range []client.ObjectList{&corev1.ConfigMapList{}, &appsv1.StatefulSetList{}, &appsv1.DeploymentList{}, &v1alpha1.TargetAllocatorList{}, &rbacv1.RoleList{}} {
		require.NoError(t, h.client.List(t.Context(), list, client.InNamespace(ns), client.MatchingLabels{manifests.LabelManagedBy: manifests.ManagedBy}))
		items, err := metaItems(list)
		require.NoError(t, err)
		for _, o := range items {
			ref := metav1.GetControllerOf(o)
			require.NotNil(t, ref, "%T %s has no controller", o, o.GetName())
			var owner client.Object = &v1beta1.OpenTelemetryCollector{}
			if ref.Kind == "TargetAllocator" {
				owner = &v1alpha1.TargetAllocator{}
			}
			require.NoError(t, h.client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: ref.Name}, owner), "owner of %s", o.GetName())
			require.Equal(t, ref.UID, owner.GetUID(), "owner of %s is the live %s", o.GetName(), ref.Name)
		}
	}
}

func metaItems(list client.ObjectList) ([]client.Object, error) {
	var out []client.Object
	switch l := list.(type) {
	case *corev1.ConfigMapList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *appsv1.StatefulSetList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *appsv1.DeploymentList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *v1alpha1.TargetAllocatorList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *rbacv1.RoleList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		return nil, fmt.Errorf("unexpected %T", list)
	}
	return out, nil
}

func configMapCount(t *testing.T, h harness, ns string) int {
	t.Helper()
	var list corev1.ConfigMapList
	require.NoError(t, h.client.List(t.Context(), &list, client.InNamespace(ns),
		client.MatchingLabels(manifests.SelectorLabels(ns, faultName, manifests.ComponentCollector))))
	return len(list.Items)
}

// TestOperatorKilledAfterEachWrite stops the operator after the k-th write of
// one full reconcile (the k-th write fails and nothing after it runs), for
// every k, both when a collector is created and when its config changes.
// Restarted, the operator converges to the objects of an uninterrupted run,
// leaves no orphan, and keeps configVersions collector ConfigMaps (one more,
// the new version, only between the interrupted write and the restart).
func TestOperatorKilledAfterEachWrite(t *testing.T) {
	t.Parallel()
	h := startClient(t)
	c := h.client
	ctx := t.Context()
	newNS := func(name string) string {
		testenv.Namespace(t, c, name, nil)
		_, err := h.createYAML(t, name, faultCollector)
		require.NoError(t, err)
		return name
	}

	for _, phase := range []struct {
		name    string
		prepare func(ns string) // before the measured reconcile
	}{
		{"create", func(string) {}},
		{"config-change", func(ns string) {
			converge(t, h, ns)
			changeConfig(t, h, ns)
		}},
	} {
		t.Run(phase.name, func(t *testing.T) {
			ref := newNS("fault-ref-" + phase.name)
			phase.prepare(ref)
			var log writeLog
			require.NoError(t, pass(ctx, log.wrap(c), h, ref))
			writes := log.snapshot()
			k := len(writes)
			require.Positive(t, k)
			t.Logf("%s: one full reconcile makes %d writes: %v", phase.name, k, writes)
			converge(t, h, ref)
			want := objectsOf(t, h, ref)
			require.Equal(t, 1, configMapCount(t, h, ref))

			for i := 1; i <= k; i++ {
				ns := newNS(fmt.Sprintf("fault-%s-%d", phase.name, i))
				phase.prepare(ns)
				var faulty writeLog
				faulty.failAt.Store(int64(i))
				err := pass(ctx, faulty.wrap(c), h, ns)
				require.ErrorIs(t, err, errInjected, "write %d", i)
				require.LessOrEqual(t, configMapCount(t, h, ns), 2, "killed at write %d: at most the new version beside the kept one", i)
				converge(t, h, ns)
				got := objectsOf(t, h, ns)
				require.Equal(t, keys(want), keys(got), "killed at write %d (%s): the same objects, no orphan", i, writes[i-1])
				for key := range want {
					require.JSONEq(t, want[key], got[key], "killed at write %d (%s): %s", i, writes[i-1], key)
				}
				require.Equal(t, 1, configMapCount(t, h, ns), "killed at write %d: configVersions kept", i)
				requireOwnersExist(t, h, ns)
			}
		})
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
