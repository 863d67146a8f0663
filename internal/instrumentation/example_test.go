package instrumentation_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/instrumentation"
)

// A pod asking for Java with the namespace's only Instrumentation: the
// caller resolves the annotation value and the owner chain, Mutate injects.
func ExampleMutate() {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"instrumentation.opentelemetry.io/inject-java": "true"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "shop/checkout:1.2"}}},
	}
	ns := metav1.ObjectMeta{Name: "shop"}
	for _, r := range instrumentation.Requests(ns, pod) {
		fmt.Println("resolve", r.Annotation, "=", r.Value)
	}
	inst := &v1alpha1.Instrumentation{Spec: v1alpha1.InstrumentationSpec{Exporter: v1alpha1.Exporter{Endpoint: "http://collector:4318"}}}
	out := instrumentation.Mutate(pod, instrumentation.Input{
		Namespace:        ns,
		Instrumentations: map[instrumentation.Language]*v1alpha1.Instrumentation{instrumentation.Java: inst},
		Owners:           []instrumentation.Owner{{Kind: "ReplicaSet", Name: "checkout-7d9f"}, {Kind: "Deployment", Name: "checkout"}},
	}, instrumentation.DefaultSettings())
	fmt.Println(out[0].Language, out[0].Result)
	fmt.Println(pod.Spec.InitContainers[0].Name)
	for _, e := range pod.Spec.Containers[0].Env {
		if e.Name == "JAVA_TOOL_OPTIONS" || e.Name == "OTEL_SERVICE_NAME" {
			fmt.Printf("%s=%s\n", e.Name, e.Value)
		}
	}
	// Output:
	// resolve instrumentation.opentelemetry.io/inject-java = true
	// java injected
	// opentelemetry-auto-instrumentation-java
	// JAVA_TOOL_OPTIONS= -javaagent:/otel-auto-instrumentation-java-app/javaagent.jar
	// OTEL_SERVICE_NAME=checkout
}
