package controller_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/manifests"
)

// TestSchemaRefusesReplicatedLeastWeighted: least-weighted depends on the
// allocator's history, so the API server refuses more than one replica with
// it, on both resources; the user's security contexts are accepted.
func TestSchemaRefusesReplicatedLeastWeighted(t *testing.T) {
	t.Parallel()
	ns := "schema-rules"
	h := start(t, ns)
	const msg = "least-weighted depends on each allocator's history"
	for i, tc := range []struct {
		name, doc string
		wantErr   string
	}{
		{"allocator replicas 2", "apiVersion: opentelemetry.io/v1alpha1\nkind: TargetAllocator\nmetadata: {name: lw-2}\nspec: {replicas: 2, allocationStrategy: least-weighted}\n", msg},
		{"allocator replicas 1", "apiVersion: opentelemetry.io/v1alpha1\nkind: TargetAllocator\nmetadata: {name: lw-1}\nspec: {replicas: 1, allocationStrategy: least-weighted}\n", ""},
		{"allocator consistent-hashing replicas 3", "apiVersion: opentelemetry.io/v1alpha1\nkind: TargetAllocator\nmetadata: {name: ch-3}\nspec: {replicas: 3}\n", ""},
		{"collector replicas 2", strings.Replace(upstreamExample, "    enabled: true\n", "    enabled: true\n    replicas: 2\n    allocationStrategy: least-weighted\n", 1), msg},
		{"collector replicas 2 consistent-hashing", strings.Replace(upstreamExample, "    enabled: true\n", "    enabled: true\n    replicas: 2\n", 1), ""},
		{"security contexts", strings.Replace(upstreamExample, "    enabled: true\n", "    enabled: true\n    securityContext: {runAsUser: 1000}\n    podSecurityContext: {fsGroup: 1000}\n", 1), ""},
		{"allocator security contexts", "apiVersion: opentelemetry.io/v1alpha1\nkind: TargetAllocator\nmetadata: {name: sc}\nspec: {securityContext: {runAsUser: 1000}, podSecurityContext: {fsGroup: 1}}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(tc.doc, "name: collector-with-ta", fmt.Sprintf("name: c-%d", i), 1)
			_, err := h.createYAML(t, ns, doc)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.True(t, apierrors.IsInvalid(err), "want a schema rejection, got %v", err)
			require.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

// TestClusterRBACUnambiguousAndWatched: allocators ("team", "a-x") and
// ("team-a", "x") get distinct cluster RBAC, each binding its own
// ServiceAccount; a deleted ClusterRoleBinding and an edited ClusterRole are
// put back.
func TestClusterRBACUnambiguousAndWatched(t *testing.T) {
	t.Parallel()
	h := startWith(t, managerOptions{namespaces: []string{"rbac-team", "rbac-team-a"}})
	ctx := t.Context()
	doc := func(name, ns string) string {
		return fmt.Sprintf("apiVersion: opentelemetry.io/v1alpha1\nkind: TargetAllocator\nmetadata: {name: %s}\nspec: {prometheusCR: {enabled: true, allowNamespaces: [%s]}}\n", name, ns)
	}
	_, err := h.createYAML(t, "rbac-team", doc("a-x", "rbac-team"))
	require.NoError(t, err)
	_, err = h.createYAML(t, "rbac-team-a", doc("x", "rbac-team-a"))
	require.NoError(t, err)
	first, second := manifests.ClusterRoleName("rbac-team", "a-x"), manifests.ClusterRoleName("rbac-team-a", "x")
	require.NotEqual(t, first, second)
	var crb1, crb2 rbacv1.ClusterRoleBinding
	h.get(t, "", first, &crb1)
	h.get(t, "", second, &crb2)
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "a-x-targetallocator", Namespace: "rbac-team"}}, crb1.Subjects)
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "x-targetallocator", Namespace: "rbac-team-a"}}, crb2.Subjects)

	// Deleted: recreated.
	require.NoError(t, h.client.Delete(ctx, &crb1))
	eventually(t, waitFor, func() error {
		var again rbacv1.ClusterRoleBinding
		if err := h.client.Get(ctx, types.NamespacedName{Name: first}, &again); err != nil {
			return err
		}
		if again.UID == crb1.UID {
			return fmt.Errorf("not recreated yet")
		}
		return nil
	})
	// Edited: restored.
	var cr rbacv1.ClusterRole
	h.get(t, "", first, &cr)
	want := cr.Rules
	h.update(t, &cr, func() {
		cr.Rules = append(cr.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list"}})
	})
	eventually(t, waitFor, func() error {
		var again rbacv1.ClusterRole
		if err := h.client.Get(ctx, types.NamespacedName{Name: first}, &again); err != nil {
			return err
		}
		if len(again.Rules) != len(want) {
			return fmt.Errorf("rules not restored yet: %v", again.Rules)
		}
		return nil
	})
}

// TestStatusOnlyChangeWritesNothing: once a collector is reconciled, a
// status-only change of its StatefulSet (a pod became ready) updates the
// collector's status and writes no object.
func TestStatusOnlyChangeWritesNothing(t *testing.T) {
	t.Parallel()
	ns := "status-only"
	var log writeLog
	h := startWith(t, managerOptions{namespaces: []string{ns}, wrap: log.wrap})
	ctx := t.Context()
	_, err := h.createYAML(t, ns, upstreamExample)
	require.NoError(t, err)
	const name = "collector-with-ta"
	h.waitReady(t, ns, name, metav1.ConditionTrue)
	eventually(t, waitFor, func() error {
		var ta v1alpha1.TargetAllocator
		if err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &ta); err != nil {
			return err
		}
		_, err := readyCondition(ta.Status.Conditions, ta.Generation)
		return err
	})
	// Let the reconciles the creation queued settle, then count.
	settle := func() { quiet(t, &log) }
	settle()
	log.reset()
	for i := range 3 {
		var sts appsv1.StatefulSet
		h.get(t, ns, name+"-collector", &sts)
		h.updateStatus(t, &sts, func() {
			sts.Status.Replicas = 1
			sts.Status.ReadyReplicas = int32(i % 2)
			sts.Status.ObservedGeneration = sts.Generation
		})
		want := fmt.Sprintf("%d/1", i%2)
		eventually(t, waitFor, func() error {
			if got := h.collector(t, ns, name).Status.Scale.StatusReplicas; got != want {
				return fmt.Errorf("statusReplicas %s, want %s", got, want)
			}
			return nil
		})
	}
	settle()
	for _, w := range log.snapshot() {
		require.True(t, strings.HasPrefix(w, "status-update *v1beta1.OpenTelemetryCollector"), "only the collector's status is written, got %v", log.snapshot())
	}
}

// TestImmutableStatefulSetFieldRecreated: a change of an immutable
// StatefulSet field (serviceName, volumeClaimTemplates) deletes and recreates
// the StatefulSet, and the objects applied after it are still applied.
func TestImmutableStatefulSetFieldRecreated(t *testing.T) {
	t.Parallel()
	ns := "immutable"
	h := start(t, ns)
	_, err := h.createYAML(t, ns, upstreamExample)
	require.NoError(t, err)
	const name = "collector-with-ta"
	h.waitReady(t, ns, name, metav1.ConditionTrue)
	var before appsv1.StatefulSet
	h.get(t, ns, name+"-collector", &before)

	c := h.collector(t, ns, name)
	h.update(t, c, func() {
		c.Spec.ServiceName = "elsewhere"
		c.Spec.TargetAllocator.Image = "example.com/allocator:2" // applied after the StatefulSet
	})
	c = h.waitReady(t, ns, name, metav1.ConditionTrue)
	var after appsv1.StatefulSet
	h.get(t, ns, name+"-collector", &after)
	require.NotEqual(t, before.UID, after.UID, "recreated")
	require.Equal(t, "elsewhere", after.Spec.ServiceName)
	var ta v1alpha1.TargetAllocator
	h.get(t, ns, name, &ta)
	require.Equal(t, "example.com/allocator:2", ta.Spec.Image, "later objects are applied")

	// An invalid spec the dry run refuses keeps the live StatefulSet.
	h.update(t, c, func() {
		c.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_Name"}}}
	})
	h.waitReady(t, ns, name, metav1.ConditionFalse)
	var kept appsv1.StatefulSet
	h.get(t, ns, name+"-collector", &kept)
	require.Equal(t, after.UID, kept.UID, "an invalid spec never deletes the running StatefulSet")
}

// TestSecondCollectorOfAllocatorIsTold: two collectors naming one
// TargetAllocator: it serves the first by name; the second reports
// Ready=False with a Warning event, and becomes Ready when the first goes.
func TestSecondCollectorOfAllocatorIsTold(t *testing.T) {
	t.Parallel()
	ns := "two-collectors"
	h := start(t, ns)
	ctx := t.Context()
	_, err := h.createYAML(t, ns, "apiVersion: opentelemetry.io/v1alpha1\nkind: TargetAllocator\nmetadata: {name: shared}\nspec: {}\n")
	require.NoError(t, err)
	labelled := func(name string) string {
		return strings.Replace(upstreamExample, "  name: collector-with-ta\n", "  name: "+name+"\n  labels:\n    "+manifests.LabelTargetAllocator+": shared\n", 1)
	}
	_, err = h.createYAML(t, ns, labelled("a"))
	require.NoError(t, err)
	_, err = h.createYAML(t, ns, labelled("b"))
	require.NoError(t, err)
	h.waitReady(t, ns, "a", metav1.ConditionTrue)
	b := h.waitReady(t, ns, "b", metav1.ConditionFalse)
	cond := meta.FindStatusCondition(b.Status.Conditions, "Ready")
	require.Equal(t, "TargetAllocatorInUse", cond.Reason)
	require.Contains(t, cond.Message, "collector a")
	requireWarningEvent(t, h, ns, "b", "TargetAllocatorInUse")
	require.NoError(t, h.client.Delete(ctx, h.collector(t, ns, "a")))
	h.waitReady(t, ns, "b", metav1.ConditionTrue)
}

// TestCacheHoldsOnlyOwnObjects: with controller.CacheByObject, as in
// cmd/operator, the manager caches the operator's ConfigMaps and Services and
// not the others of the namespace, and still reconciles. A tenant's
// ConfigMap that carries the operator's label is cached without its data
// (so labelled 1 MiB ConfigMaps cannot fill the operator's memory), and an
// edit of the operator's own ConfigMap is still put back.
func TestCacheHoldsOnlyOwnObjects(t *testing.T) {
	t.Parallel()
	ns := "restricted-cache"
	var log writeLog
	h := startWith(t, managerOptions{namespaces: []string{ns}, restrictCache: true, wrap: log.wrap})
	ctx := t.Context()
	require.NoError(t, h.client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-ours"}}))
	require.NoError(t, h.client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forged", Labels: map[string]string{manifests.LabelManagedBy: manifests.ManagedBy}},
		Data:       map[string]string{"big": strings.Repeat("x", 512<<10)},
		BinaryData: map[string][]byte{"bin": make([]byte, 256<<10)},
	}))
	_, err := h.createYAML(t, ns, upstreamExample)
	require.NoError(t, err)
	h.waitReady(t, ns, "collector-with-ta", metav1.ConditionTrue)
	// A second manager's cache with the same options, read directly.
	cfg := env.Config
	cl, err := cacheClient(t, cfg, ns)
	require.NoError(t, err)
	var cms corev1.ConfigMapList
	eventually(t, waitFor, func() error {
		if err := cl.List(ctx, &cms, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(cms.Items) == 0 {
			return fmt.Errorf("cache empty")
		}
		return nil
	})
	for _, cm := range cms.Items {
		require.Equal(t, manifests.ManagedBy, cm.Labels[manifests.LabelManagedBy], "cached %s", cm.Name)
		require.Empty(t, cm.Data, "cached %s holds no data", cm.Name)
		require.Empty(t, cm.BinaryData, "cached %s holds no data", cm.Name)
		require.Empty(t, cm.ManagedFields, "cached %s holds no managed fields", cm.Name)
	}
	require.False(t, slices.ContainsFunc(cms.Items, func(cm corev1.ConfigMap) bool { return cm.Name == "not-ours" }))
	require.True(t, slices.ContainsFunc(cms.Items, func(cm corev1.ConfigMap) bool { return cm.Name == "forged" }), "the label is all the cache selects by")

	// The collector's own ConfigMap, edited behind the operator's back, is
	// put back although the cache holds none of its data.
	var own corev1.ConfigMapList
	require.NoError(t, h.client.List(ctx, &own, client.InNamespace(ns),
		client.MatchingLabels(manifests.SelectorLabels(ns, "collector-with-ta", manifests.ComponentCollector))))
	require.NotEmpty(t, own.Items)
	cm := own.Items[0]
	want := maps.Clone(cm.Data)
	require.NotEmpty(t, want)
	for k := range cm.Data {
		cm.Data[k] = "edited"
	}
	require.NoError(t, h.client.Update(ctx, &cm))
	eventually(t, waitFor, func() error {
		var got corev1.ConfigMap
		if err := h.client.Get(ctx, client.ObjectKeyFromObject(&cm), &got); err != nil {
			return err
		}
		if !maps.Equal(want, got.Data) {
			return fmt.Errorf("ConfigMap %s not put back yet", cm.Name)
		}
		return nil
	})
}

// TestInvalidAllocatorConfigKeepsLastGood: a TargetAllocator whose rendered
// config the allocator's own parser refuses (two jobs of one name) reports
// Ready=False with the parser's message and a Warning event, and its objects
// stay as they were.
func TestInvalidAllocatorConfigKeepsLastGood(t *testing.T) {
	t.Parallel()
	ns := "invalid-allocator-config"
	h := start(t, ns)
	ctx := t.Context()
	_, err := h.createYAML(t, ns, `
apiVersion: opentelemetry.io/v1alpha1
kind: TargetAllocator
metadata: {name: jobs}
spec:
  scrapeConfigs:
  - job_name: a
    static_configs: [{targets: ["a:1"]}]
`)
	require.NoError(t, err)
	ready := func(want metav1.ConditionStatus) *v1alpha1.TargetAllocator {
		var ta v1alpha1.TargetAllocator
		eventually(t, waitFor, func() error {
			if err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "jobs"}, &ta); err != nil {
				return err
			}
			c, err := readyCondition(ta.Status.Conditions, ta.Generation)
			if err != nil {
				return err
			}
			if c.Status != want {
				return fmt.Errorf("Ready=%s, want %s", c.Status, want)
			}
			return nil
		})
		return &ta
	}
	ta := ready(metav1.ConditionTrue)
	var cm corev1.ConfigMap
	h.get(t, ns, "jobs-targetallocator", &cm)

	h.update(t, ta, func() { ta.Spec.ScrapeConfigs = append(ta.Spec.ScrapeConfigs, ta.Spec.ScrapeConfigs[0]) })
	ta = ready(metav1.ConditionFalse)
	cond := meta.FindStatusCondition(ta.Status.Conditions, "Ready")
	require.Equal(t, "InvalidConfig", cond.Reason)
	require.Contains(t, cond.Message, `multiple scrape configs with job name "a"`)
	var after corev1.ConfigMap
	h.get(t, ns, "jobs-targetallocator", &after)
	require.Equal(t, cm.Data, after.Data, "the last good config stays")
	requireWarningEvent(t, h, ns, "jobs", "InvalidConfig")
}
