package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shardwise/shardwise/apis/v1beta1"
)

// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Image",type="string",JSONPath=".status.image"
// +kubebuilder:printcolumn:name="Management",type="string",JSONPath=".spec.managementState",description="Management state",priority=1

// TargetAllocator is a target allocator: it discovers Prometheus targets and
// assigns each to exactly one collector of the collectors it selects.
type TargetAllocator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired allocator.
	// +optional
	Spec TargetAllocatorSpec `json:"spec,omitempty"`
	// status is the observed state of the allocator.
	// +optional
	Status TargetAllocatorStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// TargetAllocatorList is a list of TargetAllocator.
type TargetAllocatorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TargetAllocator `json:"items"`
}

// +kubebuilder:validation:XValidation:rule="!has(self.allocationStrategy) || self.allocationStrategy != 'per-node'",message="allocationStrategy per-node is not supported on a standalone TargetAllocator: use an OpenTelemetryCollector in mode daemonset with targetAllocator.enabled and allocationStrategy per-node"
// +kubebuilder:validation:XValidation:rule="!has(self.volumeMounts)",message="volumeMounts is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.ports)",message="ports is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.envFrom)",message="envFrom is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.volumes)",message="volumes is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.lifecycle)",message="lifecycle is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.terminationGracePeriodSeconds)",message="terminationGracePeriodSeconds is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.topologySpreadConstraints)",message="topologySpreadConstraints is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.hostNetwork)",message="hostNetwork is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.hostPID)",message="hostPID is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.shareProcessNamespace)",message="shareProcessNamespace is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.priorityClassName)",message="priorityClassName is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.initContainers)",message="initContainers is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.additionalContainers)",message="additionalContainers is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.args)",message="args is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.global)",message="global is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.weightOverrides)",message="weightOverrides is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.livenessProbe)",message="livenessProbe is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.readinessProbe)",message="readinessProbe is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || self.replicas <= 1 || !has(self.allocationStrategy) || self.allocationStrategy != 'least-weighted'",message="allocationStrategy least-weighted depends on each allocator's history, so several replicas would serve different assignments: use replicas 1, or consistent-hashing"

// TargetAllocatorSpec is the desired state of a TargetAllocator.
type TargetAllocatorSpec struct {
	// managementState says whether the operator reconciles this allocator.
	// +optional
	// +kubebuilder:default:=managed
	ManagementState v1beta1.ManagementStateType `json:"managementState,omitempty"`
	// replicas is the number of allocator pods. More than one is refused
	// with allocationStrategy least-weighted, which depends on each
	// allocator's history.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`
	// image is the allocator image; empty means the operator's default.
	// +optional
	Image string `json:"image,omitempty"`
	// imagePullPolicy of the allocator container.
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// serviceAccount names an existing service account for the allocator pods.
	// When set, the operator creates no service account and no RBAC for it.
	// +optional
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// resources of the allocator container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// env of the allocator container.
	// +optional
	// +listType=atomic
	Env []corev1.EnvVar `json:"env,omitempty"`
	// nodeSelector schedules the allocator pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// tolerations of the allocator pods.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// affinity of the allocator pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// podAnnotations are added to the allocator pods.
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`
	// podDisruptionBudget of the allocator; by default one pod may be unavailable.
	// +optional
	PodDisruptionBudget *v1beta1.PodDisruptionBudgetSpec `json:"podDisruptionBudget,omitempty"`
	// allocationStrategy is how targets are assigned to collectors.
	// +optional
	// +kubebuilder:default:=consistent-hashing
	AllocationStrategy v1beta1.TargetAllocatorAllocationStrategy `json:"allocationStrategy,omitempty"`
	// filterStrategy is how targets are filtered before assignment.
	// +optional
	// +kubebuilder:default:=relabel-config
	FilterStrategy v1beta1.TargetAllocatorFilterStrategy `json:"filterStrategy,omitempty"`
	// scrapeConfigs are Prometheus scrape configurations, in Prometheus' format.
	// +optional
	// +listType=atomic
	// +kubebuilder:pruning:PreserveUnknownFields
	ScrapeConfigs []v1beta1.AnyConfig `json:"scrapeConfigs,omitempty"`
	// prometheusCR configures discovery of prometheus-operator resources.
	// +optional
	PrometheusCR v1beta1.TargetAllocatorPrometheusCR `json:"prometheusCR,omitempty"`
	// collectorNotReadyGracePeriod is how long a not-ready collector keeps its targets.
	// +optional
	// +kubebuilder:default:="30s"
	// +kubebuilder:validation:Format:=duration
	CollectorNotReadyGracePeriod *metav1.Duration `json:"collectorNotReadyGracePeriod,omitempty"`
	// allowInsecureAuthSecrets serves secrets in scrape configs over plain HTTP.
	// +optional
	AllowInsecureAuthSecrets bool `json:"allowInsecureAuthSecrets,omitempty"`
	// mtls secures the allocator's API with mutual TLS: see v1beta1.TargetAllocatorMTLS.
	// +optional
	Mtls *v1beta1.TargetAllocatorMTLS `json:"mtls,omitempty"`

	// securityContext of the allocator container. The operator fills the
	// fields left unset with the restricted Pod Security Standard's, but none
	// that contradicts what is set.
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
	// podSecurityContext of the allocator pods. The operator fills in
	// runAsNonRoot (unless a user 0 is set) and the RuntimeDefault seccomp
	// profile where unset.
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`
	// ipFamilies are the IP families of the allocator Service, as upstream.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:Enum=IPv4;IPv6
	IPFamilies []corev1.IPFamily `json:"ipFamilies,omitempty"`
	// ipFamilyPolicy of the allocator Service; the API server's default
	// (SingleStack) when unset.
	// +optional
	// +kubebuilder:validation:Enum=SingleStack;PreferDualStack;RequireDualStack
	IPFamilyPolicy *corev1.IPFamilyPolicy `json:"ipFamilyPolicy,omitempty"`
	// trafficDistribution of the allocator Service, e.g. PreferClose.
	// +optional
	TrafficDistribution *string `json:"trafficDistribution,omitempty"`

	v1beta1.UnsupportedPodFields `json:",inline"`

	// args is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Args *runtime.RawExtension `json:"args,omitempty"`
	// global is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Global *runtime.RawExtension `json:"global,omitempty"`
	// observability.metrics.enableMetrics creates a ServiceMonitor
	// (monitoring.coreos.com/v1) <name>-targetallocator for the allocator's
	// metrics on its Service port targetallocation, with
	// observability.metrics.extraLabels, when prometheus-operator's CRDs are
	// installed (the MetricsMonitor condition says whether it is applied).
	// +optional
	Observability v1beta1.ObservabilitySpec `json:"observability,omitempty"`
	// hostAliases are added to the allocator pods' /etc/hosts.
	// +optional
	// +listType=atomic
	HostAliases []corev1.HostAlias `json:"hostAliases,omitempty"`
	// podDnsConfig is the allocator pods' DNS configuration.
	// +optional
	PodDNSConfig *corev1.PodDNSConfig `json:"podDnsConfig,omitempty"`
	// dnsPolicy of the allocator pods; unset: None when podDnsConfig sets
	// nameservers, else ClusterFirst.
	// +optional
	DNSPolicy *corev1.DNSPolicy `json:"dnsPolicy,omitempty"`
	// networkPolicy creates a NetworkPolicy <name>-targetallocator-networkpolicy that
	// admits ingress to the allocator's ports only from the collector pods
	// it serves and from the operator's namespace. Unset enabled means true
	// when the allocator discovers monitors outside its own namespace (the
	// targets' __meta_* labels it serves are then other tenants') and false
	// otherwise; upstream's default comes from its operand.networkpolicy
	// feature gate.
	// +optional
	NetworkPolicy *v1beta1.NetworkPolicySpec `json:"networkPolicy,omitempty"`
	// weightOverrides is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +listType=atomic
	WeightOverrides []runtime.RawExtension `json:"weightOverrides,omitempty"`
	// livenessProbe is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	LivenessProbe *runtime.RawExtension `json:"livenessProbe,omitempty"`
	// readinessProbe is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	ReadinessProbe *runtime.RawExtension `json:"readinessProbe,omitempty"`
}

// TargetAllocatorStatus is the observed state of a TargetAllocator.
type TargetAllocatorStatus struct {
	// version of the allocator, from its image tag when that is a version.
	// +optional
	Version string `json:"version,omitempty"`
	// image of the allocator container.
	// +optional
	Image string `json:"image,omitempty"`
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
