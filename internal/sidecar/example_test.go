package sidecar_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/sidecar"
)

// A pod asking for the namespace's only sidecar collector: the caller lists
// the namespace's collectors and resolves the owner chain, Mutate injects.
func ExampleMutate() {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{sidecar.Annotation: "true"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "shop/checkout:1.2"}}},
	}
	ns := metav1.ObjectMeta{Name: "shop"}
	req := sidecar.Requested(ns, pod)
	fmt.Println("collector in", req.Namespace, "named", fmt.Sprintf("%q", req.Name))

	collectors := []v1beta1.OpenTelemetryCollector{{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "shop"},
		Spec:       v1beta1.OpenTelemetryCollectorSpec{Mode: v1beta1.ModeSidecar},
	}}
	in := sidecar.Input{Namespace: ns, Owners: []sidecar.Owner{{Kind: "ReplicaSet", Name: "checkout-7d9f"}, {Kind: "Deployment", Name: "checkout"}}}
	in.Collector, in.Unresolved = sidecar.Choose(req.Namespace, collectors)
	out := sidecar.Mutate(pod, in, sidecar.Settings{Image: "otel/opentelemetry-collector-contrib:0.165.0", NativeSidecar: true})
	fmt.Println(out.Result, out.Collector)
	c := pod.Spec.InitContainers[0]
	fmt.Println(c.Name, *c.RestartPolicy, c.Args)
	fmt.Println(pod.Labels[sidecar.LabelInjected])
	// Output:
	// collector in shop named ""
	// injected shop/agent
	// otc-container Always [--config=env:OTEL_CONFIG]
	// shop.agent
}
