package container_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests/container"
)

// ExampleBuild builds the sidecar container of a collector with an otlp
// receiver and the health_check extension: the same ports and probes as its
// Deployment's would have.
func ExampleBuild() {
	c := &v1beta1.OpenTelemetryCollector{
		ObjectMeta: metav1.ObjectMeta{Namespace: "observability", Name: "simplest"},
		Spec: v1beta1.OpenTelemetryCollectorSpec{Config: v1beta1.Config{
			Receivers:  v1beta1.AnyConfig{Object: map[string]any{"otlp": map[string]any{"protocols": map[string]any{"grpc": map[string]any{}, "http": map[string]any{}}}}},
			Exporters:  v1beta1.AnyConfig{Object: map[string]any{"debug": map[string]any{}}},
			Extensions: &v1beta1.AnyConfig{Object: map[string]any{"health_check": map[string]any{}}},
			Service: v1beta1.Service{
				Extensions: []string{"health_check"},
				Pipelines:  map[string]*v1beta1.Pipeline{"traces": {Receivers: []string{"otlp"}, Exporters: []string{"debug"}}},
			},
		}},
	}
	ctr, err := container.Build(c, container.Options{Image: "otel/opentelemetry-collector:0.165.0", Config: "(rendered)"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range ctr.Ports {
		fmt.Printf("%s %d/%s\n", p.Name, p.ContainerPort, p.Protocol)
	}
	fmt.Println(ctr.Args, ctr.LivenessProbe.HTTPGet.Port.IntVal)
	// Output:
	// health-check 13133/TCP
	// metrics 8888/TCP
	// otlp-grpc 4317/TCP
	// otlp-http 4318/TCP
	// [--config=env:OTEL_CONFIG] 13133
}
