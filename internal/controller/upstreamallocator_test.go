package controller_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/testenv"
)

// upstreamWrittenAllocator is a TargetAllocator as the upstream operator
// v0.158 writes it for a collector with targetAllocator.enabled
// (internal/manifests/collector/targetallocator.go): its Go types serialize
// the structs podDnsConfig, networkPolicy, observability and resources even
// when empty. The collector's author listed its own namespace in
// allowNamespaces and turned the allocator's metrics on.
const upstreamWrittenAllocator = `
apiVersion: opentelemetry.io/v1alpha1
kind: TargetAllocator
metadata:
  name: upstream-wrote
  labels:
    app.kubernetes.io/managed-by: opentelemetry-operator
spec:
  managementState: managed
  resources: {}
  podDnsConfig: {}
  networkPolicy: {}
  observability:
    metrics:
      enableMetrics: true
      extraLabels: {release: monitoring}
  allocationStrategy: consistent-hashing
  filterStrategy: relabel-config
  prometheusCR:
    enabled: true
    scrapeInterval: 30s
    allowNamespaces: [upstream-allocator]
    serviceMonitorSelector: {}
    podMonitorSelector: {}
`

// TestUpstreamWrittenAllocator: the TargetAllocator the upstream operator
// wrote is accepted and reconciled (issue 25 item 8): it becomes Ready and
// its observability.metrics.enableMetrics gives a ServiceMonitor selecting
// the allocator's Service. hostAliases and the pod DNS fields reach the
// Deployment, and a collector's targetAllocator.observability reaches the
// TargetAllocator it creates, and so its ServiceMonitor.
func TestUpstreamWrittenAllocator(t *testing.T) {
	t.Parallel()
	const ns = "upstream-allocator"
	cfg := testenv.Require(t, env)
	h := startWith(t, managerOptions{namespaces: []string{ns}, monitoringRecheck: 200 * time.Millisecond})
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{testenv.MonitoringCRDs()}})
	require.NoError(t, err)
	installRBAC(t, h, "targetallocator_secret_reader.yaml", "")
	ctx := t.Context()

	_, err = h.createYAML(t, ns, upstreamWrittenAllocator)
	require.NoError(t, err, "the schema accepts what upstream wrote")
	const name = "upstream-wrote"
	ta := waitAllocatorReady(t, h, ns, name)
	cond := meta.FindStatusCondition(ta.Status.Conditions, controller.ConditionMetricsMonitor)
	require.NotNil(t, cond)
	require.Equal(t, metav1.ConditionTrue, cond.Status, cond.Message)
	sm := getMonitor(t, h, "ServiceMonitor", ns, manifests.TargetAllocatorName(name))
	requireControlledBy(t, sm, ta)
	require.Equal(t, []string{manifests.TargetAllocatorName(name)}, selectedServices(t, h, ns, sm))
	require.Equal(t, []any{map[string]any{"port": "targetallocation"}}, sm.Object["spec"].(map[string]any)["endpoints"])
	require.Equal(t, "monitoring", sm.GetLabels()["release"])

	// The pod fields upstream offers on a TargetAllocator.
	h.update(t, ta, func() {
		ta.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"backend.local"}}}
		ta.Spec.PodDNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.10"}}
	})
	eventually(t, waitFor, func() error {
		var d appsv1.Deployment
		if err := h.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: manifests.TargetAllocatorName(name)}, &d); err != nil {
			return err
		}
		pod := d.Spec.Template.Spec
		if len(pod.HostAliases) != 1 || pod.DNSConfig == nil || pod.DNSPolicy != corev1.DNSNone {
			return fmt.Errorf("pod spec not updated: hostAliases %v, dnsConfig %v, dnsPolicy %s", pod.HostAliases, pod.DNSConfig, pod.DNSPolicy)
		}
		return nil
	})

	// A collector's own allocator with its metrics on.
	_, err = h.createYAML(t, ns, `
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata:
  name: with-metrics
spec:
  mode: statefulset
  targetAllocator:
    enabled: true
    observability: {metrics: {enableMetrics: true}}
  config:
    receivers:
      prometheus:
        config:
          scrape_configs:
          - job_name: self
            static_configs: [{targets: ["127.0.0.1:8888"]}]
    exporters: {debug: {}}
    service: {pipelines: {metrics: {receivers: [prometheus], exporters: [debug]}}}
`)
	require.NoError(t, err)
	owned := waitAllocatorReady(t, h, ns, "with-metrics")
	require.True(t, owned.Spec.Observability.Metrics.EnableMetrics)
	requireControlledBy(t, getMonitor(t, h, "ServiceMonitor", ns, manifests.TargetAllocatorName("with-metrics")), owned)
}

// waitAllocatorReady waits for the TargetAllocator's Ready=True of its
// current generation.
func waitAllocatorReady(t *testing.T, h harness, ns, name string) *v1alpha1.TargetAllocator {
	t.Helper()
	var ta v1alpha1.TargetAllocator
	eventually(t, waitFor, func() error {
		if err := h.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &ta); err != nil {
			return err
		}
		c, err := readyCondition(ta.Status.Conditions, ta.Generation)
		if err != nil {
			return err
		}
		if c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
		}
		return nil
	})
	return &ta
}
