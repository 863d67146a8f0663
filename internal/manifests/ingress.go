package manifests

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardwise/shardwise/apis/v1beta1"
)

// IngressName is the name of a collector's Ingress, as upstream.
func IngressName(instance string) string { return dnsName(instance, "-ingress") }

// ingress is the Ingress of a collector with ingress.type ingress, or nil:
// it routes to the receiver ports of the base Service (ports, the user's
// first, then the inferred ones), not to its exporter ports, as upstream.
// Without receiver ports there is no Ingress (nor base Service).
func ingress(c *v1beta1.OpenTelemetryCollector, ports []corev1.ServicePort, exporters []corev1.ServicePort) *networkingv1.Ingress {
	spec := c.Spec.Ingress
	if spec == nil || spec.Type != v1beta1.IngressTypeIngress {
		return nil
	}
	var names []string
	for i, p := range ports {
		user := i < len(c.Spec.Ports)
		if !user && slices.ContainsFunc(exporters, func(e corev1.ServicePort) bool { return e.Port == p.Port }) {
			continue
		}
		names = append(names, p.Name)
	}
	if len(names) == 0 {
		return nil
	}
	svc := CollectorService(c.Name)
	backend := func(port string) networkingv1.HTTPIngressPath {
		return networkingv1.HTTPIngressPath{
			Path:     "/" + port,
			PathType: ptr.To(networkingv1.PathTypePrefix),
			Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
				Name: svc, Port: networkingv1.ServiceBackendPort{Name: port},
			}},
		}
	}
	var rules []networkingv1.IngressRule
	if spec.RuleType == v1beta1.IngressRuleTypeSubdomain {
		for _, n := range names {
			path := backend(n)
			path.Path = "/"
			rules = append(rules, networkingv1.IngressRule{
				Host:             n + "." + spec.Hostname,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{path}}},
			})
		}
	} else {
		paths := make([]networkingv1.HTTPIngressPath, len(names))
		for i, n := range names {
			paths[i] = backend(n)
		}
		rules = []networkingv1.IngressRule{{
			Host:             spec.Hostname,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths}},
		}}
	}
	name := IngressName(c.Name)
	obj := Meta(c.Namespace, name, Labels(c.Namespace, c.Name, ComponentCollector, name))
	obj.Annotations = maps.Clone(spec.Annotations)
	return &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: obj,
		Spec: networkingv1.IngressSpec{
			IngressClassName: spec.IngressClassName,
			TLS:              slices.Clone(spec.TLS),
			Rules:            rules,
		},
	}
}
