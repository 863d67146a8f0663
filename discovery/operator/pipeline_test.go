package operator

import (
	"context"
	"testing"
	"time"

	kubernetessd "github.com/prometheus/prometheus/discovery/kubernetes"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/discovery"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
	"github.com/shardwise/shardwise/internal/testenv"
)

// TestPipelineServiceMonitor runs the whole path against a real API server:
// a ServiceMonitor becomes a job through prometheus-operator's generator
// (EndpointSlice role by default), Prometheus' kubernetes_sd discovers its
// endpoints, the relabel filter keeps the matching port, and the Manager sends
// the targets with their discovered labels and node.
func TestPipelineServiceMonitor(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	ctx := t.Context()
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	const ns = "pipeline"
	createWebEndpoints(t, kube, ns)
	c := newCtrlClient(t, cfg)
	applyDoc(t, c, `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: web, namespace: pipeline, labels: {pipeline: "yes"}}
spec:
  selector: {matchLabels: {app: web}}
  endpoints: [{port: metrics}]
`)

	parsed, err := allocatorconfig.ParseConfig([]byte(`
collector_namespace: pipeline
prometheus_cr:
  enabled: true
  service_monitor_selector: {matchLabels: {pipeline: "yes"}}
`))
	require.NoError(t, err)
	m, err := discovery.NewManager(discovery.ManagerOptions{CoalesceInterval: 20 * time.Millisecond, KubeConfigFile: testenv.WriteKubeconfig(t, cfg)})
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	startOperatorWatcher(t, cfg, m, WatcherOptions{Config: parsed.PrometheusCR, Namespace: "pipeline"})

	const job = "serviceMonitor/pipeline/web/0"
	var targets []*allocation.Target
	timeout := time.After(60 * time.Second)
	for len(targets) != 2 {
		select {
		case u := <-m.Updates():
			if ts, ok := u.Targets[job]; ok {
				targets = ts
			}
		case <-timeout:
			t.Fatalf("the job never had 2 targets (last: %d)", len(targets))
		}
	}
	state := map[string][]string{}
	for _, tg := range targets {
		state[job] = append(state[job], tg.Address)
	}
	require.ElementsMatch(t, []string{"10.0.0.1:8080", "10.0.0.2:8080"}, state[job], "the http port is dropped by the relabel filter")
	require.Contains(t, m.ScrapeConfigs(), job)
	for _, c := range m.ScrapeConfigs()[job].ServiceDiscoveryConfigs {
		require.Empty(t, c.(*kubernetessd.SDConfig).KubeConfig, "the served config carries no local kubeconfig path")
	}
	nodes := []string{}
	for _, tg := range targets {
		nodes = append(nodes, tg.Node)
		require.Equal(t, "web", tg.Labels.Get("__meta_kubernetes_service_name"))
		require.Equal(t, "metrics", tg.Labels.Get("__meta_kubernetes_endpointslice_port_name"))
		require.NotZero(t, tg.Hash)
	}
	require.ElementsMatch(t, []string{"node-a", "node-b"}, nodes)
}

// createWebEndpoints creates namespace ns with Service web (ports metrics and
// http) and an EndpointSlice of two ready endpoints on nodes a and b.
func createWebEndpoints(t *testing.T, kube kubernetes.Interface, ns string) {
	t.Helper()
	ctx := t.Context()
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "metrics", Port: 8080, TargetPort: intstr.FromInt32(8080)},
			{Name: "http", Port: 80, TargetPort: intstr.FromInt32(80)},
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.0.1"}, NodeName: ptr.To("node-a"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"10.0.0.2"}, NodeName: ptr.To("node-b"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
		},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("metrics"), Port: ptr.To[int32](8080)},
			{Name: ptr.To("http"), Port: ptr.To[int32](80)},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}
