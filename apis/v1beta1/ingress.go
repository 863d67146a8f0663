package v1beta1

import networkingv1 "k8s.io/api/networking/v1"

// IngressType is how a collector is exposed.
// +kubebuilder:validation:Enum=ingress;route
type IngressType string

// IngressType values.
const (
	// IngressTypeIngress creates a networking.k8s.io/v1 Ingress.
	IngressTypeIngress IngressType = "ingress"
	// IngressTypeRoute would create OpenShift Routes; shardwise refuses it.
	IngressTypeRoute IngressType = "route"
)

// IngressRuleType is how the Ingress exposes the receivers.
// +kubebuilder:validation:Enum=path;subdomain
type IngressRuleType string

// IngressRuleType values.
const (
	// IngressRuleTypePath exposes each receiver port on the path
	// /<port name> of hostname.
	IngressRuleTypePath IngressRuleType = "path"
	// IngressRuleTypeSubdomain exposes each receiver port on the host
	// <port name>.<hostname>.
	IngressRuleTypeSubdomain IngressRuleType = "subdomain"
)

// TLSRouteTerminationType is the TLS termination of an OpenShift Route.
// +kubebuilder:validation:Enum=insecure;edge;passthrough;reencrypt
type TLSRouteTerminationType string

// IngressSpec exposes the receivers of a collector outside the cluster, as
// upstream's ingress field.
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type != 'route'",message="ingress.type route creates OpenShift Routes, which shardwise does not build: use type ingress, or create a Route for the Service <name>-collector yourself"
// +kubebuilder:validation:XValidation:rule="!has(self.ruleType) || self.ruleType != 'subdomain' || (has(self.hostname) && size(self.hostname) > 0 && self.hostname != '*')",message="a valid Ingress hostname has to be defined for subdomain ruleType"
type IngressSpec struct {
	// type is ingress for a networking.k8s.io/v1 Ingress <name>-ingress;
	// unset, nothing is created. route (OpenShift) is refused.
	// +optional
	Type IngressType `json:"type,omitempty"`
	// ruleType is path (the default: one rule on hostname, a path
	// /<port name> per receiver port) or subdomain (one rule per receiver
	// port, on the host <port name>.<hostname>).
	// +optional
	RuleType IngressRuleType `json:"ruleType,omitempty"`
	// hostname of the Ingress rules.
	// +optional
	Hostname string `json:"hostname,omitempty"`
	// annotations of the Ingress, e.g. cert-manager.io/cluster-issuer.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// tls of the Ingress.
	// +optional
	// +listType=atomic
	TLS []networkingv1.IngressTLS `json:"tls,omitempty"`
	// ingressClassName of the Ingress.
	// +optional
	IngressClassName *string `json:"ingressClassName,omitempty"`
	// route configures OpenShift Routes (type route), which shardwise does
	// not build; accepted for upstream's manifests.
	// +optional
	Route OpenShiftRoute `json:"route,omitempty"`
}

// OpenShiftRoute configures the Routes of type route.
type OpenShiftRoute struct {
	// termination is the TLS termination of the Routes.
	// +optional
	Termination TLSRouteTerminationType `json:"termination,omitempty"`
}
