package operator

import (
	"slices"
	"testing"

	"github.com/alecthomas/units"
	"github.com/prometheus/prometheus/discovery/consul"
	"github.com/prometheus/prometheus/discovery/kubernetes"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/shardwise/shardwise/internal/allocatorconfig"
	"github.com/shardwise/shardwise/internal/testenv"
)

// TestNewerMonitorFields is issue 25 item 9: the monitor fields that
// prometheus-operator v0.85 did not have, and that its CRDs of v0.93 let
// users write, reach the generated jobs instead of being dropped: a
// ServiceMonitor's serviceDiscoveryRole, scrapeNativeHistograms and
// bodySizeLimit, a PodMonitor's bodySizeLimit, a ScrapeConfig's
// bodySizeLimit, scrapeNativeHistograms and Consul healthFilter.
func TestNewerMonitorFields(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	ctx := t.Context()
	kube, err := k8s.NewForConfig(cfg)
	require.NoError(t, err)
	const ns = "newer-fields"
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	c := newCtrlClient(t, cfg)
	for _, doc := range []string{`apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: sm, namespace: newer-fields}
spec:
  selector: {matchLabels: {app: a}}
  serviceDiscoveryRole: Endpoints
  scrapeNativeHistograms: true
  bodySizeLimit: 2MiB
  endpoints: [{port: metrics}]
`, `apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata: {name: pm, namespace: newer-fields}
spec:
  selector: {matchLabels: {app: a}}
  bodySizeLimit: 5MiB
  podMetricsEndpoints: [{port: metrics}]
`, `apiVersion: monitoring.coreos.com/v1alpha1
kind: ScrapeConfig
metadata: {name: sc, namespace: newer-fields}
spec:
  bodySizeLimit: 3MiB
  scrapeNativeHistograms: true
  consulSDConfigs:
  - server: consul.example:8500
    healthFilter: 'Service.Tags contains "metrics"'
`} {
		applyDoc(t, c, doc)
	}
	parsed, err := allocatorconfig.ParseConfig([]byte(`
prometheus_cr:
  enabled: true
  service_monitor_selector: {}
  pod_monitor_selector: {}
  scrape_config_selector: {}
  service_monitor_namespace_selector: {matchLabels: {kubernetes.io/metadata.name: newer-fields}}
  pod_monitor_namespace_selector: {matchLabels: {kubernetes.io/metadata.name: newer-fields}}
  scrape_config_namespace_selector: {matchLabels: {kubernetes.io/metadata.name: newer-fields}}
`))
	require.NoError(t, err)
	sink := newSinkRecorder()
	startOperatorWatcher(t, cfg, sink, WatcherOptions{Config: parsed.PrometheusCR, Namespace: ns})
	want := []string{"podMonitor/newer-fields/pm/0", "scrapeConfig/newer-fields/sc", "serviceMonitor/newer-fields/sm/0"}
	scs := sink.waitFor(t, func(jobs []string) bool {
		slices.Sort(jobs)
		return slices.Equal(jobs, want)
	})
	jobs := map[string]int{}
	for i, sc := range scs {
		jobs[sc.JobName] = i
	}

	sm := scs[jobs["serviceMonitor/newer-fields/sm/0"]]
	require.Len(t, sm.ServiceDiscoveryConfigs, 1)
	k8sSD, ok := sm.ServiceDiscoveryConfigs[0].(*kubernetes.SDConfig)
	require.True(t, ok, "%T", sm.ServiceDiscoveryConfigs[0])
	require.Equal(t, kubernetes.RoleEndpoint, k8sSD.Role, "serviceDiscoveryRole: Endpoints overrides the default endpointslice")
	require.NotNil(t, sm.ScrapeNativeHistograms)
	require.True(t, *sm.ScrapeNativeHistograms)
	require.Equal(t, 2*units.MiB, sm.BodySizeLimit)

	pm := scs[jobs["podMonitor/newer-fields/pm/0"]]
	require.Equal(t, 5*units.MiB, pm.BodySizeLimit)

	sc := scs[jobs["scrapeConfig/newer-fields/sc"]]
	require.Equal(t, 3*units.MiB, sc.BodySizeLimit)
	require.NotNil(t, sc.ScrapeNativeHistograms)
	require.True(t, *sc.ScrapeNativeHistograms)
	require.Len(t, sc.ServiceDiscoveryConfigs, 1)
	consulSD, ok := sc.ServiceDiscoveryConfigs[0].(*consul.SDConfig)
	require.True(t, ok, "%T", sc.ServiceDiscoveryConfigs[0])
	require.Equal(t, `Service.Tags contains "metrics"`, consulSD.HealthFilter)
}
