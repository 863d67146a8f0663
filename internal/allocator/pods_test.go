package allocator

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shardwise/shardwise/internal/testenv"
)

// TestCollectorsFromPods runs the allocator on collector discovery: the
// ready pods matching collector_selector in collector_namespace receive the
// targets, and a deleted pod's targets go to the others.
func TestCollectorsFromPods(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	ctx := t.Context()
	const ns = "observability"
	kube := clientIn(t, cfg, ns)
	pod := func(name string, lbls map[string]string) {
		readyPod(t, kube, ns, name, lbls, "")
	}
	collector := map[string]string{"app.kubernetes.io/component": "opentelemetry-collector"}
	pod("otel-collector-0", collector)
	pod("otel-collector-1", collector)
	pod("web-0", map[string]string{"app": "web"})

	path := filepath.Join(t.TempDir(), "ta.yaml")
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, `
listen_addr: 127.0.0.1:0
kube_config_file_path: %s
collector_namespace: %s
collector_not_ready_grace_period: 1s
collector_selector:
  matchLabels:
    app.kubernetes.io/component: opentelemetry-collector
config:
  scrape_configs:
    - job_name: static job
      static_configs:
        - targets: [a:1, b:1, c:1, d:1, e:1, f:1, g:1, h:1]
`, testenv.WriteKubeconfig(t, cfg), ns), 0o600))
	base, _ := start(t, path)

	pods := []string{"otel-collector-0", "otel-collector-1", "web-0"}
	eventually(t, func() bool {
		a := assigned(t, base, "static job", pods...)
		return count(a) == 8 && len(a["otel-collector-0"]) > 0 && len(a["otel-collector-1"]) > 0
	})
	require.Empty(t, assigned(t, base, "static job", "web-0")["web-0"], "a pod outside the selector is no collector")

	// A deleted pod leaves once the grace period (1s here) ends.
	require.NoError(t, kube.CoreV1().Pods(ns).Delete(ctx, "otel-collector-1", metav1.DeleteOptions{}))
	eventually(t, func() bool { return len(assigned(t, base, "static job", "otel-collector-0")["otel-collector-0"]) == 8 })
}

// TestUpstreamConfigsUseOwnNamespace runs the allocator on configs the
// upstream operator renders, with the environment it sets (OTELCOL_NAMESPACE,
// no collector_namespace in the file), against a real API server: for a
// collector's allocator (operator-01) the pods matching the selector in that
// namespace are the collectors, not those of another namespace; for a
// standalone TargetAllocator (operator-02, collector_selector: null) every
// pod of that namespace is. Before, the first counted pods of every
// namespace and the second found no collector.
func TestUpstreamConfigsUseOwnNamespace(t *testing.T) {
	// Not parallel: t.Setenv.
	cfg := testenv.Require(t, env)
	ctx := t.Context()
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	pod := func(ns, name string, lbls map[string]string) {
		readyPod(t, kube, ns, name, lbls, "")
	}
	// The labels upstream's selector in operator-01 matches.
	collector := map[string]string{
		"app.kubernetes.io/component":  "opentelemetry-collector",
		"app.kubernetes.io/instance":   "default.my-instance",
		"app.kubernetes.io/managed-by": "opentelemetry-operator",
		"app.kubernetes.io/part-of":    "opentelemetry",
	}
	for _, tc := range []struct {
		file, own, other string
		own0, own1       map[string]string // labels of the two pods of the own namespace
	}{
		{"operator-01-collector.yaml", "upstream-col", "upstream-col-other", collector, collector},
		{"operator-02-without-collector.yaml", "upstream-ta", "upstream-ta-other", map[string]string{"any": "a"}, map[string]string{"any": "b"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			for _, ns := range []string{tc.own, tc.other} {
				_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			pod(tc.own, "own-0", tc.own0)
			pod(tc.own, "own-1", tc.own1)
			pod(tc.other, "elsewhere-0", collector)

			golden, err := os.ReadFile(filepath.Join("testdata", "upstream", tc.file))
			require.NoError(t, err)
			var top map[string]any
			require.NoError(t, yaml.Unmarshal(golden, &top))
			top["listen_addr"] = "127.0.0.1:0"
			top["kube_config_file_path"] = testenv.WriteKubeconfig(t, cfg)
			top["config"] = map[string]any{"scrape_configs": []any{map[string]any{
				"job_name":       "static job",
				"static_configs": []any{map[string]any{"targets": []string{"a:1", "b:1", "c:1", "d:1", "e:1", "f:1", "g:1", "h:1"}}},
			}}}
			b, err := yaml.Marshal(top)
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "targetallocator.yaml")
			require.NoError(t, os.WriteFile(path, b, 0o600))
			t.Setenv("OTELCOL_NAMESPACE", tc.own)
			base, _ := start(t, path)

			pods := []string{"own-0", "own-1", "elsewhere-0"}
			eventually(t, func() bool {
				a := assigned(t, base, "static job", pods...)
				return count(a) == 8 && len(a["own-0"]) > 0 && len(a["own-1"]) > 0
			})
			require.Empty(t, assigned(t, base, "static job", "elsewhere-0")["elsewhere-0"], "a pod of another namespace is no collector")
		})
	}
}

// clientIn returns a clientset for cfg, having created namespace ns.
func clientIn(t *testing.T, cfg *rest.Config, ns string) kubernetes.Interface {
	t.Helper()
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return kube
}

// readyPod creates a collector pod named name with labels in ns, on node
// (none when empty), and marks it Ready, as the kubelet would.
func readyPod(t *testing.T, kube kubernetes.Interface, ns, name string, labels map[string]string, node string) {
	t.Helper()
	p, err := kube.CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "otc-container", Image: "otel"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{
		Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now(),
	}}}
	_, err = kube.CoreV1().Pods(ns).UpdateStatus(t.Context(), p, metav1.UpdateOptions{})
	require.NoError(t, err)
}
