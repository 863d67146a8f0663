package manifests

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/shardwise/shardwise/apis/v1alpha1"
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

// TargetAllocatorNetworkPolicyName is the name of an allocator's
// NetworkPolicy, as upstream.
func TargetAllocatorNetworkPolicyName(instance string) string {
	return dnsName(instance, "-targetallocator-networkpolicy")
}

// allocatorNetworkPolicyEnabled says whether ta gets a NetworkPolicy:
// networkPolicy.enabled when set, else whether it discovers monitors outside
// its own namespace, whose targets' __meta_* labels it serves.
func allocatorNetworkPolicyEnabled(ta *v1alpha1.TargetAllocator) bool {
	p := ta.Spec.PrometheusCR
	def := p.Enabled && DiscoversOtherNamespaces(p, ta.Namespace)
	if ta.Spec.NetworkPolicy == nil {
		return def
	}
	return ptr.Deref(ta.Spec.NetworkPolicy.Enabled, def)
}

// allocatorNetworkPolicy is the NetworkPolicy of an allocator, or nil:
// ingress to the allocator pods (selector) on its ports is admitted only from
// the collector pods it serves (collectors, in its namespace) and from the
// operator's namespace. Kubelet probes come from the node and are not
// subject to it on the usual CNIs.
func allocatorNetworkPolicy(ta *v1alpha1.TargetAllocator, s Settings, labels, selector, collectors map[string]string, ports []corev1.ContainerPort) *networkingv1.NetworkPolicy {
	if !allocatorNetworkPolicyEnabled(ta) {
		return nil
	}
	allowed := make([]networkingv1.NetworkPolicyPort, len(ports))
	for i, p := range ports {
		allowed[i] = networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(p.ContainerPort))}
	}
	var from []networkingv1.NetworkPolicyPeer
	// An empty selector would admit every pod of the namespace.
	if len(collectors) > 0 {
		from = append(from, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: maps.Clone(collectors)}})
	}
	if s.OperatorNamespace != "" {
		from = append(from, networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{corev1.LabelMetadataName: s.OperatorNamespace},
		}})
	}
	rules := []networkingv1.NetworkPolicyIngressRule{}
	if len(from) > 0 {
		rules = append(rules, networkingv1.NetworkPolicyIngressRule{Ports: allowed, From: from})
	}
	name := TargetAllocatorNetworkPolicyName(ta.Name)
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: Meta(ta.Namespace, name, labels),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: maps.Clone(selector)},
			Ingress:     rules,
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
}
