package webhook

import (
	"cmp"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/internal/instrumentation"
)

// collectorConfigs are the same minimal collector configuration in each
// version's form (a YAML string in v1alpha1, an object in v1beta1).
var collectorConfigs = map[string]any{
	"v1alpha1": "receivers: {otlp: {protocols: {grpc: {}}}}\nexporters: {debug: {}}\nservice: {pipelines: {traces: {receivers: [otlp], exporters: [debug]}}}\n",
	"v1beta1": map[string]any{
		"receivers": map[string]any{"otlp": map[string]any{"protocols": map[string]any{"grpc": map[string]any{}}}},
		"exporters": map[string]any{"debug": map[string]any{}},
		"service":   map[string]any{"pipelines": map[string]any{"traces": map[string]any{"receivers": []any{"otlp"}, "exporters": []any{"debug"}}}},
	},
}

// collectorObject is an OpenTelemetryCollector of the version with the
// spec given as YAML and the minimal configuration.
func collectorObject(t *testing.T, version, ns, name, spec string) *unstructured.Unstructured {
	t.Helper()
	s := map[string]any{}
	require.NoError(t, yaml.Unmarshal([]byte(spec), &s))
	s["config"] = collectorConfigs[version]
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "opentelemetry.io/" + version,
		"kind":       "OpenTelemetryCollector",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       s,
	}}
	return u
}

// TestV1alpha1RulesMatchV1beta1: a v1alpha1 OpenTelemetryCollector that
// breaks one of v1beta1's rules is refused by the API server with v1beta1's
// message, before any conversion, as its v1beta1 twin is; and v1alpha1's own
// forms of the same fields (top-level minReplicas/maxReplicas, an empty
// update strategy as Go clients send it) are read as conversion reads them.
func TestV1alpha1RulesMatchV1beta1(t *testing.T) {
	op := startOperator(t, instrumentation.DefaultSettings())
	t.Cleanup(func() { op.stop(t) })
	c := op.client
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "alpha-rules-"}}
	require.NoError(t, c.Create(t.Context(), n))
	ns := n.Name

	const (
		taMode     = "the target allocator needs mode statefulset, or mode daemonset with allocationStrategy per-node"
		autoscaler = "autoscaler is only supported in modes deployment and statefulset: a DaemonSet runs one pod per node and a sidecar one per application pod"
		minNeedMax = "autoscaler.minReplicas needs autoscaler.maxReplicas"
		minMax     = "autoscaler.minReplicas must not exceed autoscaler.maxReplicas"
		replicas   = "replicas must not exceed autoscaler.maxReplicas"
	)
	for _, tc := range []struct {
		name string
		// alpha and beta are the specs in each version; beta empty means
		// the same as alpha.
		alpha, beta string
		// msg is the message of both versions unless betaMsg is set.
		msg, betaMsg string
	}{
		{name: "target allocator without mode", alpha: "targetAllocator: {enabled: true}", msg: taMode},
		{name: "target allocator in deployment", alpha: "mode: deployment\ntargetAllocator: {enabled: true}", msg: taMode},
		{name: "per-node on statefulset", alpha: "mode: statefulset\ntargetAllocator: {allocationStrategy: per-node}", msg: "allocationStrategy per-node needs mode daemonset"},
		{name: "ingress on sidecar", alpha: "mode: sidecar\ningress: {type: ingress}", msg: "the OpenTelemetry Collector mode is set to sidecar, which does not support ingress"},
		{name: "ingress type route", alpha: "ingress: {type: route}", msg: "ingress.type route creates OpenShift Routes, which shardwise does not build"},
		{name: "volumeClaimTemplates in deployment", alpha: "volumeClaimTemplates: [{metadata: {name: data}}]", msg: "volumeClaimTemplates is only supported in mode statefulset"},
		{
			name: "daemonset update strategy in deployment", alpha: "updateStrategy: {type: OnDelete}", beta: "daemonSetUpdateStrategy: {type: OnDelete}",
			msg: "updateStrategy is only supported in mode daemonset", betaMsg: "daemonSetUpdateStrategy is only supported in mode daemonset",
		},
		{name: "deploymentUpdateStrategy in daemonset", alpha: "mode: daemonset\ndeploymentUpdateStrategy: {type: Recreate}", msg: "deploymentUpdateStrategy is only supported in mode deployment"},
		{name: "sidecar tolerations", alpha: "mode: sidecar\ntolerations: [{key: a, operator: Exists}]", msg: "the OpenTelemetry Collector mode is set to sidecar, which does not support the attribute 'tolerations'"},
		{name: "sidecar priorityClassName", alpha: "mode: sidecar\npriorityClassName: high", msg: "the OpenTelemetry Collector mode is set to sidecar, which does not support the attribute 'priorityClassName'"},
		{name: "sidecar affinity", alpha: "mode: sidecar\naffinity: {podAffinity: {}}", msg: "the OpenTelemetry Collector mode is set to sidecar, which does not support the attribute 'affinity'"},
		{name: "sidecar additionalContainers", alpha: "mode: sidecar\nadditionalContainers: [{name: x, image: img}]", msg: "the OpenTelemetry Collector mode is set to sidecar, which does not support the attribute 'additionalContainers'"},
		{name: "autoscaler on daemonset", alpha: "mode: daemonset\nautoscaler: {maxReplicas: 3}", msg: autoscaler},
		{name: "top-level maxReplicas on daemonset", alpha: "mode: daemonset\nmaxReplicas: 3", beta: "mode: daemonset\nautoscaler: {maxReplicas: 3}", msg: autoscaler},
		{name: "autoscaler on sidecar", alpha: "mode: sidecar\nautoscaler: {maxReplicas: 3}", msg: autoscaler},
		{name: "minReplicas without maxReplicas", alpha: "autoscaler: {minReplicas: 2}", msg: minNeedMax},
		{name: "top-level minReplicas without maxReplicas", alpha: "minReplicas: 2", beta: "autoscaler: {minReplicas: 2}", msg: minNeedMax},
		{name: "minReplicas above maxReplicas", alpha: "autoscaler: {minReplicas: 3, maxReplicas: 2}", msg: minMax},
		{name: "top-level minReplicas above autoscaler maxReplicas", alpha: "minReplicas: 3\nautoscaler: {maxReplicas: 2}", beta: "autoscaler: {minReplicas: 3, maxReplicas: 2}", msg: minMax},
		{name: "replicas above maxReplicas", alpha: "replicas: 5\nautoscaler: {maxReplicas: 2}", msg: replicas},
		{name: "replicas above top-level maxReplicas", alpha: "replicas: 5\nmaxReplicas: 2", beta: "replicas: 5\nautoscaler: {maxReplicas: 2}", msg: replicas},
		{name: "podDisruptionBudget on daemonset", alpha: "mode: daemonset\npodDisruptionBudget: {maxUnavailable: 1}", msg: "podDisruptionBudget is only supported in modes deployment and statefulset: a DaemonSet has no disruption budget, a sidecar belongs to its application pod"},
		{name: "allocator topologySpreadConstraints", alpha: "mode: statefulset\ntargetAllocator: {enabled: true, topologySpreadConstraints: [{maxSkew: 1}]}", msg: "topologySpreadConstraints is an upstream field shardwise does not support; remove it"},
		{name: "allocator least-weighted with replicas", alpha: "mode: statefulset\ntargetAllocator: {enabled: true, replicas: 2, allocationStrategy: least-weighted}", msg: "allocationStrategy least-weighted depends on each allocator's history, so several replicas would serve different assignments: use replicas 1, or consistent-hashing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []struct{ version, spec, msg string }{
				{"v1alpha1", tc.alpha, tc.msg},
				{"v1beta1", cmp.Or(tc.beta, tc.alpha), cmp.Or(tc.betaMsg, tc.msg)},
			} {
				err := c.Create(t.Context(), collectorObject(t, v.version, ns, "bad", v.spec))
				require.Error(t, err, "%s: %s", v.version, v.spec)
				require.ErrorContains(t, err, v.msg, v.version)
			}
		})
	}

	t.Run("mode change", func(t *testing.T) {
		for _, v := range []struct{ version, name, spec, msg string }{
			{"v1alpha1", "alpha-default", "{}", "the OpenTelemetry Collector mode is set to deployment, which does not support modification"},
			{"v1alpha1", "alpha-statefulset", "mode: statefulset", "the OpenTelemetry Collector mode is set to statefulset, which does not support modification"},
			{"v1beta1", "beta-statefulset", "mode: statefulset", "the OpenTelemetry Collector mode is set to statefulset, which does not support modification"},
		} {
			obj := collectorObject(t, v.version, ns, v.name, v.spec)
			require.NoError(t, c.Create(t.Context(), obj))
			require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj))
			require.NoError(t, unstructured.SetNestedField(obj.Object, "daemonset", "spec", "mode"))
			err := c.Update(t.Context(), obj)
			require.ErrorContains(t, err, v.msg, v.version)
			require.ErrorContains(t, err, "each mode builds a different workload; delete the collector and create it with the new mode", v.version)
		}
	})

	// v1alpha1's own forms that the rules must let through: empty update
	// strategies (a Go client's zero structs), the deprecated bounds within
	// range, a target allocator on a statefulset.
	for _, spec := range []string{
		"mode: statefulset\nupdateStrategy: {}\ndeploymentUpdateStrategy: {}\ntargetAllocator: {enabled: true, replicas: 2}",
		"replicas: 2\nminReplicas: 1\nmaxReplicas: 3\nautoscaler: {minReplicas: 2}",
		"mode: daemonset\nupdateStrategy: {type: OnDelete}\ntargetAllocator: {enabled: true, allocationStrategy: per-node}",
		"mode: sidecar\ntolerations: []\npriorityClassName: \"\"",
	} {
		obj := collectorObject(t, "v1alpha1", ns, "", spec)
		obj.SetGenerateName("good-")
		require.NoError(t, c.Create(t.Context(), obj), spec)
	}
}
