package manifests

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/shardwise/shardwise/apis/v1beta1"
)

// NetworkPolicyName is the name of a collector's NetworkPolicy, as upstream.
func NetworkPolicyName(instance string) string { return dnsName(instance, "-collector-networkpolicy") }

// networkPolicy is the NetworkPolicy of a collector with
// networkPolicy.enabled, or nil: ingress to the collector pods is admitted
// from anywhere, on the collector container's ports only. Upstream admits
// every port as TCP; this keeps each port's protocol, so UDP receivers
// (jaeger thrift_compact, statsd) still receive.
func networkPolicy(c *v1beta1.OpenTelemetryCollector, selector map[string]string, ports []corev1.ContainerPort) *networkingv1.NetworkPolicy {
	if c.Spec.NetworkPolicy == nil || !ptr.Deref(c.Spec.NetworkPolicy.Enabled, false) {
		return nil
	}
	allowed := make([]networkingv1.NetworkPolicyPort, len(ports))
	for i, p := range ports {
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		allowed[i] = networkingv1.NetworkPolicyPort{Protocol: ptr.To(proto), Port: ptr.To(intstr.FromInt32(p.ContainerPort))}
	}
	name := NetworkPolicyName(c.Name)
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: Meta(c.Namespace, name, Labels(c.Namespace, c.Name, ComponentCollector, name)),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: selector},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{Ports: allowed}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
}
