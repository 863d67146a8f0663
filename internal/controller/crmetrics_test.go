package controller_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/internal/controller"
)

// TestCRMetrics: upstream's --enable-cr-metrics series, read from the API
// server: one info series per collector with its mode, one series per
// collector and component type (otlp/2 counts as otlp); a deleted
// collector's series go at once.
func TestCRMetrics(t *testing.T) {
	t.Parallel()
	const ns = "cr-metrics"
	h := startClient(t, ns)
	_, err := h.createYAML(t, ns, `
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata: {name: gateway}
spec:
  mode: statefulset
  config:
    receivers: {otlp: {protocols: {grpc: {}}}, otlp/2: {protocols: {http: {}}}}
    processors: {batch: {}}
    exporters: {debug: {}}
    service: {pipelines: {traces: {receivers: [otlp, otlp/2], processors: [batch], exporters: [debug]}}}
`)
	require.NoError(t, err)
	_, err = h.createYAML(t, ns, `
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata: {name: agent}
spec:
  config:
    receivers: {otlp: {protocols: {grpc: {}}}}
    exporters: {otlp: {endpoint: "gateway:4317"}}
    service: {pipelines: {traces: {receivers: [otlp], exporters: [otlp]}}}
`)
	require.NoError(t, err)

	reg := prometheus.NewPedanticRegistry()
	// Other tests' collectors share the API server (some stored as
	// v1alpha1, which only the conversion webhook, absent here, turns into
	// v1beta1): read this namespace's.
	require.NoError(t, reg.Register(controller.CRMetrics{Reader: client.NewNamespacedClient(h.client, ns)}))
	gather := func() string {
		families, err := reg.Gather()
		require.NoError(t, err)
		var b strings.Builder
		for _, f := range families {
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["namespace"] == ns {
					b.WriteString(f.GetName() + "{" + labels["collector_name"] + "," + labels["type"] + "} ")
					b.WriteString(strings.TrimSpace(strings.TrimPrefix(m.GetGauge().String(), "value:")) + "\n")
				}
			}
		}
		return b.String()
	}
	require.Equal(t, `opentelemetry_collector_exporters{agent,otlp} 1
opentelemetry_collector_exporters{gateway,debug} 1
opentelemetry_collector_info{agent,deployment} 1
opentelemetry_collector_info{gateway,statefulset} 1
opentelemetry_collector_processors{gateway,batch} 1
opentelemetry_collector_receivers{agent,otlp} 1
opentelemetry_collector_receivers{gateway,otlp} 1
`, gather())
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)

	require.NoError(t, h.client.Delete(t.Context(), h.collector(t, ns, "agent")))
	require.NotContains(t, gather(), "agent")
}
