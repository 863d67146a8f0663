package discovery

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
	"github.com/shardwise/shardwise/internal/testenv"
)

// TestKubernetesSDSharesLabelStrings: the patched Kubernetes SD
// (third_party/prometheus.sh, third and fourth changes) keeps one copy
// of each label and annotation name and value that pods share, and of each
// __meta_kubernetes_pod_label_* / _annotation_* name it builds, instead of
// one per pod and target; the labels served are unchanged.
func TestKubernetesSDSharesLabelStrings(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	ctx := t.Context()
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	const ns = "intern"
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for i := range 2 {
		pod, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:        fmt.Sprintf("web-%d", i),
				Labels:      map[string]string{"app.kubernetes.io/name": "web", "pod-template-hash": "7d9f8b6c5"},
				Annotations: map[string]string{"checksum/config": "5f0c4e6ad2b1c0e1d89a7f3b24e96e0a"},
			},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "web:1",
				Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}},
			}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		// The pod role makes targets of pods with an IP only.
		pod.Status.PodIP = fmt.Sprintf("10.0.0.%d", i+1)
		_, err = kube.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	m, _ := startManager(t, ManagerOptions{})
	prom, err := allocatorconfig.LoadPromConfig(fmt.Appendf(nil, `
scrape_configs:
  - job_name: pods
    kubernetes_sd_configs:
      - role: pod
        kubeconfig_file: %s
        namespaces: {names: [%s]}
    relabel_configs:
      # Read, so kept (labeluse.go trims the __meta_* labels no rule reads).
      - action: labelmap
        regex: __meta_kubernetes_pod_(label|labelpresent|annotation|annotationpresent)_(.+)
        replacement: pod_${1}_${2}
`, testenv.WriteKubeconfig(t, cfg), ns))
	require.NoError(t, err)
	require.NoError(t, m.ApplyConfig(prom))

	var targets []*allocation.Target
	for len(targets) != 2 {
		targets = recvUpdate(t, m.Updates()).Targets["pods"]
	}
	want := map[string]string{
		"__meta_kubernetes_pod_label_app_kubernetes_io_name":        "web",
		"__meta_kubernetes_pod_labelpresent_app_kubernetes_io_name": "true",
		"__meta_kubernetes_pod_label_pod_template_hash":             "7d9f8b6c5",
		"__meta_kubernetes_pod_annotation_checksum_config":          "5f0c4e6ad2b1c0e1d89a7f3b24e96e0a",
		"__meta_kubernetes_pod_annotationpresent_checksum_config":   "true",
	}
	// stored returns the name and value strings target t holds for name.
	stored := func(t *allocation.Target, name string) (string, string) {
		var n, v string
		t.Labels.Range(func(l labels.Label) {
			if l.Name == name {
				n, v = l.Name, l.Value
			}
		})
		return n, v
	}
	for name, value := range want {
		n0, v0 := stored(targets[0], name)
		n1, v1 := stored(targets[1], name)
		require.Equal(t, value, v0, name)
		require.Equal(t, value, v1, name)
		require.Same(t, unsafe.StringData(n0), unsafe.StringData(n1), "one copy of the name %s", name)
		require.Same(t, unsafe.StringData(v0), unsafe.StringData(v1), "one copy of the value of %s", name)
	}
}
