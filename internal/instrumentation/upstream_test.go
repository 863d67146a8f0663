package instrumentation

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardwise/shardwise/apis/v1alpha1"
)

// TestUpstreamE2EEnvOrder feeds upstream's e2e Instrumentations and app
// containers (tests/e2e-instrumentation/instrumentation-<lang>/00-install-
// instrumentation.yaml and 01-install-app.yaml at operator v0.158.0) to the
// mutator and checks the application container's environment variable
// names, in order, against upstream's 01-assert.yaml.
func TestUpstreamE2EEnvOrder(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) []corev1.EnvVar {
		var out []corev1.EnvVar
		for i := 0; i < len(kv); i += 2 {
			out = append(out, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		lang Language
		spec v1alpha1.InstrumentationSpec
		app  []corev1.EnvVar
		want []string
	}{
		{
			lang: Java, spec: upstreamJava().Spec,
			want: []string{"OTEL_NODE_IP", "OTEL_POD_IP", "OTEL_JAVAAGENT_DEBUG", "OTEL_INSTRUMENTATION_JDBC_ENABLED", "OTEL_TRACES_SAMPLER",
				"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_LOGS_EXPORTER", "JAVA_TOOL_OPTIONS", "OTEL_SERVICE_NAME", "OTEL_EXPORTER_OTLP_ENDPOINT",
				"OTEL_RESOURCE_ATTRIBUTES_POD_NAME", "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME", "OTEL_PROPAGATORS", "OTEL_RESOURCE_ATTRIBUTES"},
		},
		{
			lang: Python,
			spec: v1alpha1.InstrumentationSpec{
				Env:         env("OTEL_EXPORTER_OTLP_TIMEOUT", "20000", "OTEL_TRACES_SAMPLER", "always_on", "SPLUNK_TRACE_RESPONSE_HEADER_ENABLED", "true"),
				Exporter:    v1alpha1.Exporter{Endpoint: "http://deployment-collector:4317"},
				Propagators: []v1alpha1.Propagator{"jaeger", "b3"},
				Sampler:     v1alpha1.Sampler{Type: v1alpha1.ParentBasedTraceIDRatio, Argument: "0.25"},
				Python: v1alpha1.Python{AgentSpec: v1alpha1.AgentSpec{Env: env("OTEL_LOG_LEVEL", "debug", "OTEL_TRACES_EXPORTER", "otlp",
					"OTEL_EXPORTER_OTLP_ENDPOINT", "http://deployment-collector:4318", "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "system_metrics")}},
			},
			want: []string{"OTEL_NODE_IP", "OTEL_POD_IP", "OTEL_LOG_LEVEL", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
				"OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "PYTHONPATH", "OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_TRACES_SAMPLER",
				"SPLUNK_TRACE_RESPONSE_HEADER_ENABLED", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_METRICS_EXPORTER", "OTEL_LOGS_EXPORTER",
				"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES_POD_NAME", "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME", "OTEL_PROPAGATORS", "OTEL_RESOURCE_ATTRIBUTES"},
		},
		{
			lang: DotNet,
			spec: v1alpha1.InstrumentationSpec{
				Env:         env("OTEL_TRACES_SAMPLER", "always_on"),
				Exporter:    v1alpha1.Exporter{Endpoint: "http://deployment-collector:4318"},
				Propagators: []v1alpha1.Propagator{"b3multi"},
				DotNet:      v1alpha1.DotNet{AgentSpec: v1alpha1.AgentSpec{Env: env("OTEL_METRIC_EXPORT_INTERVAL", "30000")}},
			},
			app: env("ASPNETCORE_URLS", "http://+:8080"),
			want: []string{"OTEL_NODE_IP", "OTEL_POD_IP", "ASPNETCORE_URLS", "OTEL_METRIC_EXPORT_INTERVAL", "OTEL_TRACES_SAMPLER",
				"CORECLR_ENABLE_PROFILING", "CORECLR_PROFILER", "CORECLR_PROFILER_PATH", "DOTNET_STARTUP_HOOKS", "DOTNET_ADDITIONAL_DEPS",
				"OTEL_DOTNET_AUTO_HOME", "DOTNET_SHARED_STORE", "OTEL_SERVICE_NAME", "OTEL_EXPORTER_OTLP_ENDPOINT",
				"OTEL_RESOURCE_ATTRIBUTES_POD_NAME", "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME", "OTEL_PROPAGATORS", "OTEL_RESOURCE_ATTRIBUTES"},
		},
		{
			lang: NodeJS,
			spec: v1alpha1.InstrumentationSpec{
				Env: env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://deployment-collector:4318",
					"OTEL_EXPORTER_OTLP_TIMEOUT", "20000", "OTEL_TRACES_SAMPLER", "always_on", "SPLUNK_TRACE_RESPONSE_HEADER_ENABLED", "true"),
				Exporter:    v1alpha1.Exporter{Endpoint: "http://deployment-collector:4318"},
				Propagators: []v1alpha1.Propagator{"jaeger", "b3"},
				NodeJS:      v1alpha1.NodeJS{AgentSpec: v1alpha1.AgentSpec{Env: env("OTEL_NODEJS_DEBUG", "true")}},
			},
			app: env("NODE_PATH", "/usr/local/lib/node_modules"),
			want: []string{"OTEL_NODE_IP", "OTEL_POD_IP", "NODE_PATH", "OTEL_NODEJS_DEBUG", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
				"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_TRACES_SAMPLER", "SPLUNK_TRACE_RESPONSE_HEADER_ENABLED", "NODE_OPTIONS", "OTEL_METRICS_EXPORTER",
				"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES_POD_NAME", "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME", "OTEL_PROPAGATORS", "OTEL_RESOURCE_ATTRIBUTES"},
		},
	} {
		t.Run(string(tc.lang), func(t *testing.T) {
			t.Parallel()
			pod := appPod(map[string]string{InjectAnnotation(tc.lang): "true"}, corev1.Container{Name: "myapp", Image: "app:main", Env: tc.app})
			inst := &v1alpha1.Instrumentation{ObjectMeta: metav1.ObjectMeta{Name: string(tc.lang), Namespace: "shop"}, Spec: tc.spec}
			out := Mutate(pod, Input{Namespace: metav1.ObjectMeta{Name: "shop"}, Instrumentations: all(inst, tc.lang), Owners: deploymentOwners()}, DefaultSettings())
			require.Equal(t, Injected, out[0].Result, out[0].Reason)
			var got []string
			for _, e := range pod.Spec.Containers[0].Env {
				got = append(got, e.Name)
			}
			require.Equal(t, tc.want, got)
		})
	}
}
