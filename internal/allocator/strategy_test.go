package allocator

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
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/testenv"
)

// daemonSetCollector is a daemonset-mode collector whose allocator assigns
// per node, as upstream allows; the scrape targets carry the node label that
// Kubernetes discovery would set.
const daemonSetCollector = `
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata:
  name: agent
spec:
  mode: daemonset
  targetAllocator:
    enabled: true
    allocationStrategy: per-node
  config:
    receivers:
      prometheus:
        config:
          scrape_configs:
          - job_name: node
            static_configs:
            - targets: [a-1:9100, a-2:9100]
              labels: {__meta_kubernetes_pod_node_name: node-a}
            - targets: [b-1:9100]
              labels: {__meta_kubernetes_pod_node_name: node-b}
            - targets: [nowhere:9100]
    exporters:
      debug: {}
    service:
      pipelines:
        metrics:
          receivers: [prometheus]
          exporters: [debug]
`

// TestDaemonSetPerNode runs the allocator on the configuration the operator
// renders for a daemonset-mode collector with allocationStrategy per-node,
// against a real API server holding pods made from the operator's DaemonSet
// template on two nodes: the allocator finds them through its collector
// selector, serves each collector its node's targets, and handles the target
// without a node as allocation_fallback_strategy says: unassigned without one
// (what the operator renders, as upstream without its fallback feature gate),
// to one of the collectors with consistent-hashing.
func TestDaemonSetPerNode(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	const ns = "daemonset-per-node"
	kube := clientIn(t, cfg, ns)

	ds, rendered := operatorRendered[*appsv1.DaemonSet](t, []byte(daemonSetCollector), ns)

	// The DaemonSet controller's pods: the template on each node.
	for _, node := range []string{"node-a", "node-b"} {
		readyPod(t, kube, ns, "agent-collector-"+node, ds.Spec.Template.Labels, node)
	}

	kubeconfig := testenv.WriteKubeconfig(t, cfg)
	run := func(fallback string) map[string][]string {
		var m map[string]any
		require.NoError(t, sigsyaml.Unmarshal([]byte(rendered), &m))
		require.Equal(t, "per-node", m["allocation_strategy"])
		m["listen_addr"] = "127.0.0.1:0"
		m["kube_config_file_path"] = kubeconfig
		if fallback != "" {
			m["allocation_fallback_strategy"] = fallback
		}
		b, err := sigsyaml.Marshal(m)
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "ta.yaml")
		require.NoError(t, os.WriteFile(path, b, 0o600))
		base, _ := start(t, path)
		var got map[string][]string
		eventually(t, func() bool {
			got = assigned(t, base, "node", "agent-collector-node-a", "agent-collector-node-b")
			return len(got["agent-collector-node-a"]) >= 2 && len(got["agent-collector-node-b"]) >= 1
		})
		return got
	}

	got := run("")
	require.ElementsMatch(t, []string{"a-1:9100", "a-2:9100"}, got["agent-collector-node-a"])
	require.ElementsMatch(t, []string{"b-1:9100"}, got["agent-collector-node-b"])

	got = run("consistent-hashing")
	all := append(append([]string{}, got["agent-collector-node-a"]...), got["agent-collector-node-b"]...)
	require.ElementsMatch(t, []string{"a-1:9100", "a-2:9100", "b-1:9100", "nowhere:9100"}, all, fmt.Sprint(got))
	require.Subset(t, got["agent-collector-node-a"], []string{"a-1:9100", "a-2:9100"})
	require.Subset(t, got["agent-collector-node-b"], []string{"b-1:9100"})
}

// statefulSetCollector is a statefulset-mode collector whose allocator
// assigns by the ordinal strategy.
const statefulSetCollector = `
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata:
  name: scale
spec:
  mode: statefulset
  targetAllocator:
    enabled: true
    allocationStrategy: ordinal
  config:
    receivers:
      prometheus:
        config:
          scrape_configs:
          - job_name: apps
            static_configs:
            - targets: [%s]
    exporters:
      debug: {}
    service:
      pipelines:
        metrics:
          receivers: [prometheus]
          exporters: [debug]
`

// TestStatefulSetOrdinal runs the allocator on the configuration the
// operator renders for a statefulset-mode collector with allocationStrategy
// ordinal, against a real API server holding
// pods named as the StatefulSet names them: every pod holds the mean rounded,
// and when the StatefulSet scales from 3 to 4 pods only the targets the new
// pod takes move.
func TestStatefulSetOrdinal(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	const ns = "statefulset-ordinal"
	kube := clientIn(t, cfg, ns)

	var targets []string
	for i := range 30 {
		targets = append(targets, fmt.Sprintf("app-%d:8080", i))
	}
	sts, rendered := operatorRendered[*appsv1.StatefulSet](t, fmt.Appendf(nil, statefulSetCollector, strings.Join(targets, ", ")), ns)
	var m map[string]any
	require.NoError(t, sigsyaml.Unmarshal([]byte(rendered), &m))
	require.Equal(t, "ordinal", m["allocation_strategy"])
	m["listen_addr"] = "127.0.0.1:0"
	m["kube_config_file_path"] = testenv.WriteKubeconfig(t, cfg)
	m["handoff"] = map[string]any{"settle": "1ns"} // count targets right after the change
	b, err := sigsyaml.Marshal(m)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "ta.yaml")
	require.NoError(t, os.WriteFile(path, b, 0o600))

	pod := func(i int) string {
		name := fmt.Sprintf("%s-%d", sts.Name, i)
		readyPod(t, kube, ns, name, sts.Spec.Template.Labels, "")
		return name
	}
	names := []string{pod(0), pod(1), pod(2)}
	base, _ := start(t, path)
	loads := func(got map[string][]string) []int {
		var out []int
		total := 0
		for _, n := range names {
			out = append(out, len(got[n]))
			total += len(got[n])
		}
		return append(out, total)
	}
	var before map[string][]string
	eventually(t, func() bool {
		before = assigned(t, base, "apps", names...)
		return slices.Equal(loads(before), []int{10, 10, 10, 30})
	})

	names = append(names, pod(3))
	var after map[string][]string
	eventually(t, func() bool {
		after = assigned(t, base, "apps", names...)
		l := loads(after)
		return l[4] == 30 && slices.Max(l[:4]) == 8 && slices.Min(l[:4]) == 7
	})
	for _, n := range names[:3] {
		require.Subset(t, before[n], after[n], "%s only gave targets to the new pod", n)
	}
}

// operatorRendered builds the collector of manifest in namespace ns as the
// operator does, and returns its workload (the W among the objects built)
// and the targetallocator.yaml the TargetAllocator reconciler renders for
// the collector's own allocator.
func operatorRendered[W client.Object](t *testing.T, manifest []byte, ns string) (W, string) {
	t.Helper()
	var c v1beta1.OpenTelemetryCollector
	require.NoError(t, sigsyaml.UnmarshalStrict(manifest, &c))
	c.Namespace = ns
	built, err := manifests.BuildCollector(&c, manifests.Settings{CollectorImage: "otel", TargetAllocatorImage: "ta"}, nil)
	require.NoError(t, err)
	var workload W
	var ta *v1alpha1.TargetAllocator
	for _, o := range built.Objects {
		if w, ok := o.(W); ok {
			workload = w
		}
		if a, ok := o.(*v1alpha1.TargetAllocator); ok {
			ta = a
		}
	}
	require.NotNil(t, ta)
	alloc, err := manifests.BuildTargetAllocator(manifests.AllocatorInput{
		TargetAllocator:   ta,
		CollectorSelector: manifests.SelectorLabels(ns, c.Name, manifests.ComponentCollector),
	}, manifests.Settings{TargetAllocatorImage: "ta"})
	require.NoError(t, err)
	var rendered string
	for _, o := range alloc.Objects {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			rendered = cm.Data[manifests.TargetAllocatorConfigKey]
		}
	}
	require.NotEmpty(t, rendered)
	require.NotZero(t, workload, "the collector's workload")
	return workload, rendered
}
