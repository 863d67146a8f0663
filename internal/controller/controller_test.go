package controller_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/testenv"
)

// upstreamExample is the OpenTelemetry Operator's README example of a
// statefulset collector with a target allocator, unchanged.
const upstreamExample = `
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata:
  name: collector-with-ta
spec:
  mode: statefulset
  targetAllocator:
    enabled: true
  config:
    receivers:
      prometheus:
        config:
          scrape_configs:
          - job_name: 'otel-collector'
            scrape_interval: 10s
            static_configs:
            - targets: [ '0.0.0.0:8888' ]
            metric_relabel_configs:
            - action: labeldrop
              regex: (id|name)
              replacement: $$1
    exporters:
      debug: {}
    service:
      pipelines:
        metrics:
          receivers: [prometheus]
          exporters: [debug]
`

func (h harness) collector(t *testing.T, ns, name string) *v1beta1.OpenTelemetryCollector {
	t.Helper()
	var c v1beta1.OpenTelemetryCollector
	require.NoError(t, h.client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, &c))
	return &c
}

func readyCondition(conds []metav1.Condition, generation int64) (*metav1.Condition, error) {
	c := meta.FindStatusCondition(conds, controller.ConditionReady)
	if c == nil {
		return nil, fmt.Errorf("no Ready condition yet")
	}
	if c.ObservedGeneration != generation {
		return nil, fmt.Errorf("Ready condition of generation %d, want %d", c.ObservedGeneration, generation)
	}
	return c, nil
}

func (h harness) waitReady(t *testing.T, ns, name string, want metav1.ConditionStatus) *v1beta1.OpenTelemetryCollector {
	t.Helper()
	var c *v1beta1.OpenTelemetryCollector
	eventually(t, waitFor, func() error {
		c = h.collector(t, ns, name)
		cond, err := readyCondition(c.Status.Conditions, c.Generation)
		if err != nil {
			return err
		}
		if cond.Status != want {
			return fmt.Errorf("Ready=%s (%s: %s), want %s", cond.Status, cond.Reason, cond.Message, want)
		}
		return nil
	})
	return c
}

func (h harness) get(t *testing.T, ns, name string, obj client.Object) {
	t.Helper()
	eventually(t, waitFor, func() error {
		return h.client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, obj)
	})
}

func requireControlledBy(t *testing.T, obj client.Object, owner client.Object) {
	t.Helper()
	require.True(t, metav1.IsControlledBy(obj, owner), "%T %s must be controlled by %s", obj, obj.GetName(), owner.GetName())
	ref := metav1.GetControllerOf(obj)
	require.NotNil(t, ref.BlockOwnerDeletion)
	require.True(t, *ref.BlockOwnerDeletion)
}

// TestUpstreamExample applies the upstream example unchanged and checks every
// object and field the operator owes it, then its lifecycle: idempotent
// reconciles, config change, deletion of an owned object, allocator disabled.
func TestUpstreamExample(t *testing.T) {
	t.Parallel()
	ns := "upstream-example"
	h := start(t, ns)
	ctx := t.Context()
	_, err := h.createYAML(t, ns, upstreamExample)
	require.NoError(t, err)
	const name = "collector-with-ta"

	c := h.waitReady(t, ns, name, metav1.ConditionTrue)
	require.Equal(t, c.Generation, c.Status.ObservedGeneration)
	require.Equal(t, int32(1), c.Status.Scale.Replicas)
	require.Equal(t, "0/1", c.Status.Scale.StatusReplicas)
	require.Contains(t, c.Status.Scale.Selector, "app.kubernetes.io/component=opentelemetry-collector")
	require.Equal(t, settings.CollectorImage, c.Status.Image)
	require.Equal(t, "0.165.0", c.Status.Version, "from the image tag")
	// Upstream defaults were applied by the schema.
	require.Equal(t, v1beta1.ManagementStateManaged, c.Spec.ManagementState)
	require.Equal(t, v1beta1.TargetAllocatorAllocationStrategyConsistentHashing, c.Spec.TargetAllocator.AllocationStrategy)
	require.Equal(t, int32(3), *c.Spec.ConfigVersions)

	// Collector StatefulSet.
	var sts appsv1.StatefulSet
	h.get(t, ns, name+"-collector", &sts)
	requireControlledBy(t, &sts, c)
	require.Equal(t, appsv1.ParallelPodManagement, sts.Spec.PodManagementPolicy)
	require.Equal(t, name+"-collector-headless", sts.Spec.ServiceName)
	pod := sts.Spec.Template
	hash := pod.Annotations[manifests.AnnotationConfigHash]
	require.Len(t, hash, 64)
	ctr := pod.Spec.Containers[0]
	require.Equal(t, "otc-container", ctr.Name)
	require.Equal(t, []string{"--config=/conf/collector.yaml"}, ctr.Args)
	require.Equal(t, "POD_NAME", ctr.Env[0].Name)
	require.Equal(t, "metadata.name", ctr.Env[0].ValueFrom.FieldRef.FieldPath)
	cmName := name + "-collector-" + hash[:8]
	require.Equal(t, cmName, pod.Spec.Volumes[0].ConfigMap.Name)

	// Collector ConfigMap: the prometheus receiver polls the allocator.
	var cm corev1.ConfigMap
	h.get(t, ns, cmName, &cm)
	requireControlledBy(t, &cm, c)
	var rendered map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(cm.Data["collector.yaml"]), &rendered))
	prom := rendered["receivers"].(map[string]any)["prometheus"].(map[string]any)
	require.Equal(t, map[string]any{
		"endpoint":     "http://collector-with-ta-targetallocator:80",
		"interval":     "30s",
		"collector_id": "${POD_NAME}",
	}, prom["target_allocator"])
	require.NotContains(t, prom["config"], "scrape_configs")

	// Services: headless and monitoring; no receiver Service, nothing listens.
	var headless, monitoring, none corev1.Service
	h.get(t, ns, name+"-collector-headless", &headless)
	require.Equal(t, corev1.ClusterIPNone, headless.Spec.ClusterIP)
	requireControlledBy(t, &headless, c)
	h.get(t, ns, name+"-collector-monitoring", &monitoring)
	require.Equal(t, int32(8888), monitoring.Spec.Ports[0].Port)
	err = h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-collector"}, &none)
	require.True(t, apierrors.IsNotFound(err), "no receiver listens, so no %s-collector Service: %v", name, err)

	// The TargetAllocator resource, owned by the collector.
	var ta v1alpha1.TargetAllocator
	h.get(t, ns, name, &ta)
	requireControlledBy(t, &ta, c)
	require.Len(t, ta.Spec.ScrapeConfigs, 1)

	// The allocator's objects, owned by the TargetAllocator.
	taName := name + "-targetallocator"
	var taCM corev1.ConfigMap
	h.get(t, ns, taName, &taCM)
	requireControlledBy(t, &taCM, &ta)
	var taCfg map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(taCM.Data["targetallocator.yaml"]), &taCfg))
	require.Equal(t, ns, taCfg["collector_namespace"])
	require.Equal(t, "consistent-hashing", taCfg["allocation_strategy"])
	require.Equal(t, "relabel-config", taCfg["filter_strategy"])
	matchLabels := taCfg["collector_selector"].(map[string]any)["matchLabels"].(map[string]any)
	for k, v := range sts.Spec.Selector.MatchLabels {
		require.Equal(t, v, matchLabels[k], "collector_selector must be the StatefulSet's selector")
	}
	require.Len(t, matchLabels, len(sts.Spec.Selector.MatchLabels))
	jobs := taCfg["config"].(map[string]any)["scrape_configs"].([]any)
	job := jobs[0].(map[string]any)
	require.Equal(t, "otel-collector", job["job_name"])
	require.Equal(t, "$1", job["metric_relabel_configs"].([]any)[0].(map[string]any)["replacement"], "$$ is the collector's escape, not Prometheus'")

	var dep appsv1.Deployment
	h.get(t, ns, taName, &dep)
	requireControlledBy(t, &dep, &ta)
	tactr := dep.Spec.Template.Spec.Containers[0]
	require.Equal(t, settings.TargetAllocatorImage, tactr.Image)
	require.Equal(t, "/readyz", tactr.ReadinessProbe.HTTPGet.Path)
	require.Equal(t, "/livez", tactr.LivenessProbe.HTTPGet.Path)
	require.Equal(t, int32(8080), tactr.Ports[0].ContainerPort)
	require.Equal(t, manifests.Hash(taCM.Data["targetallocator.yaml"]), dep.Spec.Template.Annotations[manifests.AnnotationConfigHash])
	require.Equal(t, taName, dep.Spec.Template.Spec.ServiceAccountName)

	var taSvc corev1.Service
	h.get(t, ns, taName, &taSvc)
	require.Equal(t, int32(80), taSvc.Spec.Ports[0].Port)
	require.Equal(t, "http", taSvc.Spec.Ports[0].TargetPort.StrVal)
	var sa corev1.ServiceAccount
	h.get(t, ns, taName, &sa)
	requireControlledBy(t, &sa, &ta)
	var role rbacv1.Role
	h.get(t, ns, taName, &role)
	require.Equal(t, []string{"pods"}, role.Rules[0].Resources)
	require.Equal(t, []string{"get", "list", "watch"}, role.Rules[0].Verbs)
	var rb rbacv1.RoleBinding
	h.get(t, ns, taName, &rb)
	require.Equal(t, taName, rb.Subjects[0].Name)
	for _, n := range []string{name + "-collector", taName} {
		var pdb policyv1.PodDisruptionBudget
		h.get(t, ns, n, &pdb)
		require.Equal(t, 1, pdb.Spec.MaxUnavailable.IntValue())
	}

	t.Run("reconciles without change write nothing", func(t *testing.T) {
		watched := []client.Object{&appsv1.StatefulSet{}, &corev1.ConfigMap{}, &corev1.Service{}, &v1alpha1.TargetAllocator{}, &appsv1.Deployment{}, &v1beta1.OpenTelemetryCollector{}}
		keys := []types.NamespacedName{{Namespace: ns, Name: name + "-collector"}, {Namespace: ns, Name: cmName}, {Namespace: ns, Name: name + "-collector-headless"}, {Namespace: ns, Name: name}, {Namespace: ns, Name: taName}, {Namespace: ns, Name: name}}
		versions := func() []string {
			var out []string
			for i, o := range watched {
				require.NoError(t, h.client.Get(ctx, keys[i], o))
				out = append(out, o.GetResourceVersion())
			}
			return out
		}
		eventually(t, waitFor, func() error {
			var ta v1alpha1.TargetAllocator
			if err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &ta); err != nil {
				return err
			}
			_, err := readyCondition(ta.Status.Conditions, ta.Generation)
			return err
		})
		var readyTA v1alpha1.TargetAllocator
		h.get(t, ns, name, &readyTA)
		require.Equal(t, settings.TargetAllocatorImage, readyTA.Status.Image)
		require.Empty(t, readyTA.Status.Version, "the tag dev is not a version")
		before := versions()
		col := &controller.CollectorReconciler{Client: h.client, Scheme: h.scheme, Settings: settings}
		tar := &controller.TargetAllocatorReconciler{Client: h.client, Scheme: h.scheme, Settings: settings}
		for range 3 {
			_, err := col.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
			require.NoError(t, err)
			_, err = tar.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
			require.NoError(t, err)
		}
		require.Equal(t, before, versions())
	})

	t.Run("deleted owned object is recreated", func(t *testing.T) {
		var svc corev1.Service
		h.get(t, ns, name+"-collector-monitoring", &svc)
		require.NoError(t, h.client.Delete(ctx, &svc))
		eventually(t, waitFor, func() error {
			var again corev1.Service
			if err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: svc.Name}, &again); err != nil {
				return err
			}
			if again.UID == svc.UID {
				return fmt.Errorf("not yet recreated")
			}
			return nil
		})
	})

	t.Run("config change rolls a new ConfigMap and pod-template hash", func(t *testing.T) {
		c := h.collector(t, ns, name)
		h.update(t, c, func() { c.Spec.Config.Exporters.Object["debug"] = map[string]any{"verbosity": "detailed"} })
		h.waitReady(t, ns, name, metav1.ConditionTrue)
		var sts appsv1.StatefulSet
		h.get(t, ns, name+"-collector", &sts)
		newHash := sts.Spec.Template.Annotations[manifests.AnnotationConfigHash]
		require.NotEqual(t, hash, newHash)
		require.Equal(t, name+"-collector-"+newHash[:8], sts.Spec.Template.Spec.Volumes[0].ConfigMap.Name)
		var newCM, oldCM corev1.ConfigMap
		h.get(t, ns, name+"-collector-"+newHash[:8], &newCM)
		require.Contains(t, newCM.Data["collector.yaml"], "verbosity: detailed")
		// The previous version is kept (configVersions is 3).
		h.get(t, ns, cmName, &oldCM)
	})

	t.Run("disabled allocator is pruned", func(t *testing.T) {
		c := h.collector(t, ns, name)
		h.update(t, c, func() { c.Spec.TargetAllocator.Enabled = false })
		h.waitReady(t, ns, name, metav1.ConditionTrue)
		eventually(t, waitFor, func() error {
			var ta v1alpha1.TargetAllocator
			err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &ta)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("TargetAllocator still present: %w", err)
		})
		var sts appsv1.StatefulSet
		h.get(t, ns, name+"-collector", &sts)
		var cm corev1.ConfigMap
		h.get(t, ns, sts.Spec.Template.Spec.Volumes[0].ConfigMap.Name, &cm)
		require.NotContains(t, cm.Data["collector.yaml"], "target_allocator")
		require.Contains(t, cm.Data["collector.yaml"], "scrape_configs")
		// envtest runs no garbage collector: the allocator's objects stay, but
		// each is controlled by the deleted TargetAllocator, so a cluster's
		// garbage collector deletes them.
		var dep appsv1.Deployment
		h.get(t, ns, taName, &dep)
		requireControlledBy(t, &dep, &ta)
	})
}

// TestUnsupportedFieldRejected applies upstream manifests with fields
// shardwise does not implement: the API server rejects each, naming it.
func TestUnsupportedFieldRejected(t *testing.T) {
	t.Parallel()
	ns := "unsupported"
	h := start(t, ns)
	for i, tc := range []struct{ name, from, to, want string }{
		{"ingress route", "  mode: statefulset\n", "  mode: statefulset\n  ingress:\n    type: route\n", "ingress.type route"},
		{"httpRoute", "  mode: statefulset\n", "  mode: statefulset\n  httpRoute:\n    enabled: true\n", "httpRoute"},
		{"ipFamilies not a family", "  mode: statefulset\n", "  mode: statefulset\n  ipFamilies: [IPv5]\n", "spec.ipFamilies[0]"},
		{"ipFamilyPolicy unknown", "  mode: statefulset\n", "  mode: statefulset\n  ipFamilyPolicy: AnyStack\n", "spec.ipFamilyPolicy"},
		{"targetAllocator.mtls without certificates", "    enabled: true\n", "    enabled: true\n    mtls:\n      enabled: true\n      useCertManager: false\n", "mtls with useCertManager false needs"},
		{"allocator with deployment", "mode: statefulset", "mode: deployment", "the target allocator needs mode statefulset"},
		{"per-node with statefulset", "    enabled: true\n", "    enabled: true\n    allocationStrategy: per-node\n", "per-node needs mode daemonset"},
		{"negative replicas", "  mode: statefulset\n", "  mode: statefulset\n  replicas: -1\n", "spec.replicas"},
		{"unknown mode", "mode: statefulset", "mode: lambda", "spec.mode"},
		{"unknown allocation strategy", "    enabled: true\n", "    enabled: true\n    allocationStrategy: round-robin\n", "allocationStrategy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(upstreamExample, tc.from, tc.to, 1)
			require.NotEqual(t, upstreamExample, doc)
			doc = strings.Replace(doc, "name: collector-with-ta", fmt.Sprintf("name: rejected-%d", i), 1)
			_, err := h.createYAML(t, ns, doc)
			require.Error(t, err)
			require.True(t, apierrors.IsInvalid(err), "want a schema rejection, got %v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestOrdinalStrategyAccepted: shardwise's own allocation strategy passes
// the schema and reaches the allocator's TargetAllocator.
func TestOrdinalStrategyAccepted(t *testing.T) {
	t.Parallel()
	ns := "ordinal"
	h := start(t, ns)
	doc := strings.Replace(upstreamExample, "    enabled: true\n", "    enabled: true\n    allocationStrategy: ordinal\n", 1)
	require.NotEqual(t, upstreamExample, doc)
	_, err := h.createYAML(t, ns, doc)
	require.NoError(t, err)
	h.waitReady(t, ns, "collector-with-ta", metav1.ConditionTrue)
	var ta v1alpha1.TargetAllocator
	h.get(t, ns, "collector-with-ta", &ta)
	require.Equal(t, v1beta1.TargetAllocatorAllocationStrategyOrdinal, ta.Spec.AllocationStrategy)
}

// TestInvalidInput checks that input the builders refuse reports Ready=False
// with a reason and creates no object.
func TestInvalidInput(t *testing.T) {
	t.Parallel()
	ns := "invalid"
	h := start(t, ns)
	for _, tc := range []struct{ name, from, to, reason string }{
		{"no-prometheus-receiver", "      prometheus:\n", "      prometheus/other:\n", controller.ReasonInvalidConfig},
		{"scrape-configs-not-a-list", "          scrape_configs:\n", "          scrape_configs: {}\n          x:\n", controller.ReasonInvalidConfig},
		{"bad-user-port", "  mode: statefulset\n", "  mode: statefulset\n  ports:\n  - name: metrics\n    port: 9000\n", controller.ReasonInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(upstreamExample, tc.from, tc.to, 1)
			require.NotEqual(t, upstreamExample, doc)
			doc = strings.Replace(doc, "name: collector-with-ta", "name: "+tc.name, 1)
			_, err := h.createYAML(t, ns, doc)
			require.NoError(t, err)
			c := h.waitReady(t, ns, tc.name, metav1.ConditionFalse)
			cond := meta.FindStatusCondition(c.Status.Conditions, controller.ConditionReady)
			require.Equal(t, tc.reason, cond.Reason)
			require.NotEmpty(t, cond.Message)
			for _, list := range []client.ObjectList{&corev1.ConfigMapList{}, &appsv1.StatefulSetList{}, &corev1.ServiceList{}, &v1alpha1.TargetAllocatorList{}} {
				require.NoError(t, h.client.List(t.Context(), list, client.InNamespace(ns), client.MatchingLabels{manifests.LabelInstance: ns + "." + tc.name}))
				require.Zero(t, meta.LenList(list), "no partial set of objects: %T", list)
			}
		})
	}
}

// TestBadEditKeepsLastGoodObjects checks that a running collector edited
// into a spec the operator cannot build (an invalid port list, an invalid
// config) keeps its objects exactly as they were, reports why, and that the
// next good spec is applied again.
func TestBadEditKeepsLastGoodObjects(t *testing.T) {
	t.Parallel()
	ns := "bad-edit"
	h := start(t, ns)
	ctx := t.Context()
	const name = "collector-with-ta"
	_, err := h.createYAML(t, ns, upstreamExample)
	require.NoError(t, err)
	h.waitReady(t, ns, name, metav1.ConditionTrue)
	var sts appsv1.StatefulSet
	h.get(t, ns, manifests.CollectorName(name), &sts)
	var ta v1alpha1.TargetAllocator
	h.get(t, ns, name, &ta)

	for _, tc := range []struct {
		name   string
		edit   func(c *v1beta1.OpenTelemetryCollector)
		reason string
	}{
		{"port named metrics", func(c *v1beta1.OpenTelemetryCollector) {
			c.Spec.Ports = []v1beta1.PortsSpec{{ServicePort: corev1.ServicePort{Name: "metrics", Port: 9000}}}
		}, controller.ReasonInvalidConfig},
		{"no prometheus receiver", func(c *v1beta1.OpenTelemetryCollector) {
			c.Spec.Config.Receivers.Object = map[string]any{"otlp": map[string]any{}}
		}, controller.ReasonInvalidConfig},
	} {
		good := h.collector(t, ns, name)
		bad := good.DeepCopy()
		require.NoError(t, h.tryUpdate(ctx, bad, func() { tc.edit(bad) }), tc.name)
		c := h.waitReady(t, ns, name, metav1.ConditionFalse)
		cond := meta.FindStatusCondition(c.Status.Conditions, controller.ConditionReady)
		require.Equal(t, tc.reason, cond.Reason, tc.name)

		var after appsv1.StatefulSet
		h.get(t, ns, sts.Name, &after)
		require.Equal(t, sts.UID, after.UID, "%s: the StatefulSet is the one created before", tc.name)
		require.Equal(t, sts.Spec.Template.Annotations, after.Spec.Template.Annotations, "%s: pods were not rolled", tc.name)
		var taAfter v1alpha1.TargetAllocator
		h.get(t, ns, name, &taAfter)
		require.Equal(t, ta.UID, taAfter.UID, "%s: the TargetAllocator is kept", tc.name)

		// Back to the good spec: Ready again.
		back := h.collector(t, ns, name)
		require.NoError(t, h.tryUpdate(ctx, back, func() { back.Spec = good.Spec }), tc.name)
		h.waitReady(t, ns, name, metav1.ConditionTrue)
	}
}

// TestPrometheusCRClusterRBAC checks that prometheus-operator discovery gets
// its cluster-scoped RBAC, and that deleting the allocator removes it.
func TestPrometheusCRClusterRBAC(t *testing.T) {
	t.Parallel()
	ns := "prometheus-cr"
	h := start(t, ns)
	ctx := t.Context()
	doc := strings.Replace(upstreamExample, "    enabled: true\n", "    enabled: true\n    prometheusCR:\n      enabled: true\n      allowNamespaces: [prometheus-cr]\n      serviceMonitorSelector: {}\n", 1)
	_, err := h.createYAML(t, ns, doc)
	require.NoError(t, err)
	h.waitReady(t, ns, "collector-with-ta", metav1.ConditionTrue)
	crName := manifests.ClusterRoleName(ns, "collector-with-ta")
	var cr rbacv1.ClusterRole
	h.get(t, "", crName, &cr)
	require.Equal(t, []string{"namespaces"}, cr.Rules[0].Resources, "only namespaces are read cluster-wide")
	var role rbacv1.Role
	h.get(t, ns, manifests.TargetAllocatorName("collector-with-ta"), &role)
	require.Contains(t, role.Rules[2].Resources, "servicemonitors")
	var crb rbacv1.ClusterRoleBinding
	h.get(t, "", crName, &crb)
	hasFinalizer := func(want bool) func() error {
		return func() error {
			var ta v1alpha1.TargetAllocator
			if err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "collector-with-ta"}, &ta); err != nil {
				return err
			}
			if got := slices.Contains(ta.Finalizers, controller.ClusterRBACFinalizer); got != want {
				return fmt.Errorf("finalizer present %v, want %v", got, want)
			}
			return nil
		}
	}
	gone := func() error {
		err := h.client.Get(ctx, types.NamespacedName{Name: crName}, &rbacv1.ClusterRole{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("ClusterRole still present: %w", err)
	}
	eventually(t, waitFor, hasFinalizer(true))

	// Turning discovery off prunes the cluster RBAC and drops the finalizer.
	c := h.collector(t, ns, "collector-with-ta")
	h.update(t, c, func() { c.Spec.TargetAllocator.PrometheusCR.Enabled = false })
	eventually(t, waitFor, gone)
	eventually(t, waitFor, hasFinalizer(false))

	// Back on, then the collector goes (envtest has no garbage collector, so
	// the allocator is deleted by hand): the finalizer removes the RBAC.
	c = h.collector(t, ns, "collector-with-ta")
	h.update(t, c, func() { c.Spec.TargetAllocator.PrometheusCR.Enabled = true })
	h.get(t, "", crName, &cr)
	eventually(t, waitFor, hasFinalizer(true))
	require.NoError(t, h.client.Delete(ctx, c))
	var ta v1alpha1.TargetAllocator
	h.get(t, ns, "collector-with-ta", &ta)
	require.NoError(t, h.client.Delete(ctx, &ta))
	eventually(t, waitFor, gone)
	eventually(t, waitFor, func() error {
		err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "collector-with-ta"}, &v1alpha1.TargetAllocator{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("TargetAllocator still present: %w", err)
	})
}

// TestGeneratedRBACApplies applies the operator's generated ClusterRole to the
// API server, which validates it.
func TestGeneratedRBACApplies(t *testing.T) {
	t.Parallel()
	h := start(t, "rbac")
	b, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "rbac", "role.yaml"))
	require.NoError(t, err)
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.UnmarshalStrict(b, &role))
	require.NoError(t, h.client.Create(t.Context(), &role))
	require.NotEmpty(t, role.Rules)
}
