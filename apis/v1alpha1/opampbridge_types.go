package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardwise/shardwise/apis/v1beta1"
)

// OpAMPBridgeCapability is an OpAMP agent capability the bridge may announce,
// spelled as in the OpAMP AgentCapabilities enum without its prefix.
type OpAMPBridgeCapability string

// The capabilities an OpAMPBridge may set. ReportsStatus is always on: the
// OpAMP protocol requires it of every agent.
const (
	OpAMPBridgeCapabilityReportsStatus                  OpAMPBridgeCapability = "ReportsStatus"
	OpAMPBridgeCapabilityAcceptsRemoteConfig            OpAMPBridgeCapability = "AcceptsRemoteConfig"
	OpAMPBridgeCapabilityReportsEffectiveConfig         OpAMPBridgeCapability = "ReportsEffectiveConfig"
	OpAMPBridgeCapabilityReportsOwnTraces               OpAMPBridgeCapability = "ReportsOwnTraces"
	OpAMPBridgeCapabilityReportsOwnMetrics              OpAMPBridgeCapability = "ReportsOwnMetrics"
	OpAMPBridgeCapabilityReportsOwnLogs                 OpAMPBridgeCapability = "ReportsOwnLogs"
	OpAMPBridgeCapabilityAcceptsOpAMPConnectionSettings OpAMPBridgeCapability = "AcceptsOpAMPConnectionSettings"
	OpAMPBridgeCapabilityAcceptsOtherConnectionSettings OpAMPBridgeCapability = "AcceptsOtherConnectionSettings"
	OpAMPBridgeCapabilityAcceptsRestartCommand          OpAMPBridgeCapability = "AcceptsRestartCommand"
	OpAMPBridgeCapabilityReportsHealth                  OpAMPBridgeCapability = "ReportsHealth"
	OpAMPBridgeCapabilityReportsRemoteConfig            OpAMPBridgeCapability = "ReportsRemoteConfig"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Version",type="string",JSONPath=".status.version",description="Version of the bridge"
// +kubebuilder:printcolumn:name="Endpoint",type="string",JSONPath=".spec.endpoint"

// OpAMPBridge connects the OpenTelemetryCollectors labelled for it to an
// OpAMP server: it reports their configuration and health and applies the
// configuration the server sends.
type OpAMPBridge struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired bridge.
	// +required
	Spec OpAMPBridgeSpec `json:"spec"`
	// status is the observed state of the bridge.
	// +optional
	Status OpAMPBridgeStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// OpAMPBridgeList is a list of OpAMPBridge.
type OpAMPBridgeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OpAMPBridge `json:"items"`
}

// OpAMPBridgeSpec is the desired state of an OpAMPBridge, field for field
// the upstream operator's.
//
// +kubebuilder:validation:XValidation:rule="self.endpoint.trim().size() > 0",message="endpoint: the OpAMP server endpoint is not specified"
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || !(has(self.tls.insecure) && self.tls.insecure && has(self.tls.insecure_skip_verify) && self.tls.insecure_skip_verify)",message="tls.insecure and tls.insecure_skip_verify cannot both be true"
// +kubebuilder:validation:XValidation:rule="!(self.endpoint.trim().startsWith('ws://') || self.endpoint.trim().startsWith('http://')) || (has(self.tls) && has(self.tls.insecure) && self.tls.insecure)",message="endpoint: ws:// and http:// send the collectors' configurations and the bridge's headers in plain text; use wss:// or https://, or set tls.insecure: true to accept that"
type OpAMPBridgeSpec struct {
	// The bridge's own settings, what it reads from remoteconfiguration.yaml.
	OpAMPBridgeConnection `json:",inline"`
	// resources of the bridge container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// nodeSelector schedules the bridge pod.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// replicas is the number of bridge pods: 0 or 1, since two bridges would
	// both apply every remote configuration.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:XValidation:rule="self <= 1",message="replicas must not be greater than 1: two bridges would both apply every remote configuration"
	Replicas *int32 `json:"replicas,omitempty"`
	// securityContext of the bridge container; unset fields of the operator's
	// restricted default are filled in, but none that contradicts what is
	// set (a privileged container, user 0).
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
	// podSecurityContext of the bridge pod; unset fields of the operator's
	// restricted default are filled in.
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`
	// podAnnotations are added to the bridge pod.
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`
	// serviceAccount names an existing service account for the bridge pod.
	// When set, the operator creates no service account and no RBAC for it.
	// +optional
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// image of the bridge; empty means the operator's default.
	// +optional
	Image string `json:"image,omitempty"`
	// upgradeStrategy is accepted for compatibility with the upstream
	// operator; shardwise has no version migrations.
	// +optional
	// +kubebuilder:default:=automatic
	UpgradeStrategy v1beta1.UpgradeStrategy `json:"upgradeStrategy,omitempty"`
	// imagePullPolicy of the bridge container.
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// volumeMounts are added to the bridge container.
	// +optional
	// +listType=atomic
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
	// ports are added to the bridge Service.
	// +optional
	// +listType=atomic
	Ports []corev1.ServicePort `json:"ports,omitempty"`
	// serveAgents turns on the bridge's own OpAMP server (port 8080, the
	// Service's port 80) for collectors' opamp extensions, with a
	// NetworkPolicy that admits only collector pods to it (of the bridge's
	// namespace, or of every namespace for a cluster-wide bridge). Off, the
	// bridge listens on no OpAMP port and the Service carries only the ports
	// above (none: no Service). Upstream always serves it, to anyone.
	// +optional
	ServeAgents bool `json:"serveAgents,omitempty"`
	// env of the bridge container.
	// +optional
	// +listType=atomic
	Env []corev1.EnvVar `json:"env,omitempty"`
	// envFrom of the bridge container.
	// +optional
	// +listType=atomic
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`
	// tolerations of the bridge pod.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// volumes are added to the bridge pod.
	// +optional
	// +listType=atomic
	Volumes []corev1.Volume `json:"volumes,omitempty"`
	// hostNetwork runs the bridge pod in the host's network namespace.
	// +optional
	HostNetwork bool `json:"hostNetwork,omitempty"`
	// priorityClassName of the bridge pod.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// affinity of the bridge pod.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// topologySpreadConstraints of the bridge pod.
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// podDnsConfig is the DNS configuration of the bridge pod.
	// +optional
	PodDNSConfig *corev1.PodDNSConfig `json:"podDnsConfig,omitempty"`
	// ipFamilies of the bridge Service.
	// +optional
	// +listType=atomic
	IPFamilies []corev1.IPFamily `json:"ipFamilies,omitempty"`
	// ipFamilyPolicy of the bridge Service.
	// +optional
	IPFamilyPolicy *corev1.IPFamilyPolicy `json:"ipFamilyPolicy,omitempty"`
}

// OpAMPBridgeConnection is the part of the spec the bridge reads itself: the
// operator writes it to the bridge's remoteconfiguration.yaml, with the keys
// of the upstream bridge's configuration file, and the bridge parses that
// file into this type.
type OpAMPBridgeConnection struct {
	// endpoint is the URL of the OpAMP server: ws:// or wss:// for WebSocket,
	// http:// or https:// for plain HTTP polling.
	// +required
	Endpoint string `json:"endpoint"`
	// tls configures the connection to the OpAMP server.
	// +optional
	TLS *OpAMPBridgeTLSConfig `json:"tls,omitempty"`
	// headers are sent with every request to the OpAMP server, typically to
	// authenticate.
	// +optional
	Headers map[string]string `json:"headers,omitempty"`
	// proxy is a proxy used only for the connection to the OpAMP server.
	// +optional
	Proxy *OpAMPBridgeProxyConfig `json:"proxy,omitempty"`
	// capabilities are the OpAMP capabilities the bridge announces. At least
	// one must be given; ReportsStatus is always on and may not be false.
	// +required
	// +kubebuilder:validation:XValidation:rule="size(self) > 0",message="capabilities: the capabilities supported by the OpAMP bridge are not specified"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['ReportsStatus','AcceptsRemoteConfig','ReportsEffectiveConfig','ReportsOwnTraces','ReportsOwnMetrics','ReportsOwnLogs','AcceptsOpAMPConnectionSettings','AcceptsOtherConnectionSettings','AcceptsRestartCommand','ReportsHealth','ReportsRemoteConfig'])",message="capabilities: unknown capability; known are ReportsStatus, AcceptsRemoteConfig, ReportsEffectiveConfig, ReportsOwnTraces, ReportsOwnMetrics, ReportsOwnLogs, AcceptsOpAMPConnectionSettings, AcceptsOtherConnectionSettings, AcceptsRestartCommand, ReportsHealth, ReportsRemoteConfig"
	// +kubebuilder:validation:XValidation:rule="!('ReportsStatus' in self) || self['ReportsStatus']",message="capabilities.ReportsStatus cannot be false: every OpAMP agent reports its status"
	Capabilities map[OpAMPBridgeCapability]bool `json:"capabilities"`
	// componentsAllowed lists, per component kind (receivers, processors,
	// exporters, ...), the component names a remote configuration may use.
	// Empty allows every component.
	// +optional
	ComponentsAllowed map[string][]string `json:"componentsAllowed,omitempty"`
	// remoteConfigFields are the fields of a collector's spec (config,
	// replicas, resources, mode, image, env, ...) the OpAMP server may set
	// through a remote configuration, and the only ones the bridge reports to
	// it. A remote configuration that sets another field differently from the
	// collector is refused whole. Unset: config, replicas and resources.
	// Upstream takes every field from the server.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	RemoteConfigFields []string `json:"remoteConfigFields,omitempty"`
	// remoteConfigNamespaces are, for a bridge that manages collectors in
	// every namespace (its namespace is in the operator's
	// --opamp-bridge-cluster-wide-namespaces), the namespaces a remote
	// configuration may create or change collectors in. Unset: every
	// namespace but kube-system, kube-public and kube-node-lease. A bridge
	// confined to its own namespace writes there only.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=63
	RemoteConfigNamespaces []string `json:"remoteConfigNamespaces,omitempty"`
	// remoteConfigMayDeleteAll lets a remote configuration delete every
	// collector the bridge created. Off, a configuration that would do so
	// (what a server that lost its state sends) is refused and reported as
	// failed. Upstream deletes them.
	// +optional
	RemoteConfigMayDeleteAll bool `json:"remoteConfigMayDeleteAll,omitempty"`
	// description customises the non-identifying attributes the bridge
	// reports about itself.
	// +optional
	Description *AgentDescription `json:"description,omitempty"`
}

// AgentDescription customises what the bridge reports about itself.
type AgentDescription struct {
	// non_identifying_attributes are reported to the OpAMP server besides the
	// bridge's own (os.family, host.name).
	// +optional
	NonIdentifyingAttributes map[string]string `json:"non_identifying_attributes,omitempty"`
}

// OpAMPBridgeTLSConfig configures TLS to the OpAMP server.
type OpAMPBridgeTLSConfig struct {
	// insecure disables TLS; the endpoint must then be ws:// or http://.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
	// insecure_skip_verify keeps TLS but does not verify the server's certificate.
	// +optional
	InsecureSkipVerify bool `json:"insecure_skip_verify,omitempty"`
}

// OpAMPBridgeProxyConfig is a proxy for the connection to the OpAMP server.
type OpAMPBridgeProxyConfig struct {
	// url of the proxy: http, https, socks5 or socks5h; http when no scheme is given.
	// +optional
	URL string `json:"url,omitempty"`
	// headers are sent to an HTTP(S) proxy with CONNECT.
	// +optional
	Headers map[string]string `json:"headers,omitempty"`
}

// OpAMPBridgeStatus is the observed state of an OpAMPBridge.
type OpAMPBridgeStatus struct {
	// version of the bridge, from its image tag when that is a version.
	// +optional
	Version string `json:"version,omitempty"`
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions are the latest observations; Ready says whether every
	// desired object is in place.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
