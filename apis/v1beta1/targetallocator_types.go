package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

type (
	// TargetAllocatorAllocationStrategy is how the allocator assigns targets to collectors.
	// +kubebuilder:validation:Enum=least-weighted;consistent-hashing;per-node;ordinal
	TargetAllocatorAllocationStrategy string
	// TargetAllocatorFilterStrategy is how the allocator filters targets before assigning them.
	// +kubebuilder:validation:Enum="";none;relabel-config
	TargetAllocatorFilterStrategy string
)

// The allocation and filter strategies of the upstream API.
const (
	TargetAllocatorAllocationStrategyLeastWeighted     TargetAllocatorAllocationStrategy = "least-weighted"
	TargetAllocatorAllocationStrategyConsistentHashing TargetAllocatorAllocationStrategy = "consistent-hashing"
	TargetAllocatorAllocationStrategyPerNode           TargetAllocatorAllocationStrategy = "per-node"
	// TargetAllocatorAllocationStrategyOrdinal is shardwise's own (not in the
	// upstream API): nested balanced shares over the StatefulSet ordinals of
	// the collector pods, so scaling the collectors moves the minimum.
	TargetAllocatorAllocationStrategyOrdinal   TargetAllocatorAllocationStrategy = "ordinal"
	TargetAllocatorFilterStrategyRelabelConfig TargetAllocatorFilterStrategy     = "relabel-config"
	TargetAllocatorFilterStrategyNone          TargetAllocatorFilterStrategy     = "none"
)

// +kubebuilder:validation:XValidation:rule="!has(self.allowNamespaces) || !has(self.denyNamespaces)",message="allowNamespaces and denyNamespaces are mutually exclusive"

// TargetAllocatorPrometheusCR configures discovery of prometheus-operator
// resources (ServiceMonitor, PodMonitor, Probe, ScrapeConfig) by the allocator.
type TargetAllocatorPrometheusCR struct {
	// enabled turns discovery of prometheus-operator resources on.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// allowNamespaces limits discovery to these namespaces. Mutually exclusive with denyNamespaces.
	// +optional
	// +listType=atomic
	AllowNamespaces []string `json:"allowNamespaces,omitempty"`
	// denyNamespaces excludes these namespaces from discovery. Mutually exclusive with allowNamespaces.
	// +optional
	// +listType=atomic
	DenyNamespaces []string `json:"denyNamespaces,omitempty"`
	// scrapeInterval is the default scrape interval; the resources' own intervals override it.
	// +optional
	// +kubebuilder:default:="30s"
	// +kubebuilder:validation:Format:=duration
	ScrapeInterval *metav1.Duration `json:"scrapeInterval,omitempty"`
	// podMonitorSelector selects PodMonitors. Null matches none, empty matches all.
	// +optional
	PodMonitorSelector *metav1.LabelSelector `json:"podMonitorSelector,omitempty"`
	// podMonitorNamespaceSelector selects the namespaces of PodMonitors.
	// +optional
	// +kubebuilder:default:={}
	PodMonitorNamespaceSelector *metav1.LabelSelector `json:"podMonitorNamespaceSelector,omitempty"`
	// serviceMonitorSelector selects ServiceMonitors. Null matches none, empty matches all.
	// +optional
	ServiceMonitorSelector *metav1.LabelSelector `json:"serviceMonitorSelector,omitempty"`
	// serviceMonitorNamespaceSelector selects the namespaces of ServiceMonitors.
	// +optional
	// +kubebuilder:default:={}
	ServiceMonitorNamespaceSelector *metav1.LabelSelector `json:"serviceMonitorNamespaceSelector,omitempty"`
	// scrapeConfigSelector selects ScrapeConfigs. Null matches none, empty matches all.
	// +optional
	ScrapeConfigSelector *metav1.LabelSelector `json:"scrapeConfigSelector,omitempty"`
	// scrapeConfigNamespaceSelector selects the namespaces of ScrapeConfigs.
	// +optional
	// +kubebuilder:default:={}
	ScrapeConfigNamespaceSelector *metav1.LabelSelector `json:"scrapeConfigNamespaceSelector,omitempty"`
	// probeSelector selects Probes. Null matches none, empty matches all.
	// +optional
	ProbeSelector *metav1.LabelSelector `json:"probeSelector,omitempty"`
	// probeNamespaceSelector selects the namespaces of Probes.
	// +optional
	// +kubebuilder:default:={}
	ProbeNamespaceSelector *metav1.LabelSelector `json:"probeNamespaceSelector,omitempty"`

	// secretNamespaces are the namespaces from which referenced Secrets and
	// ConfigMaps are read; empty means each monitor's own namespace, as in
	// prometheus-operator. The operator grants `get` there only in the
	// allocator's namespace and each allowNamespaces entry.
	// +optional
	// +listType=atomic
	SecretNamespaces []string `json:"secretNamespaces,omitempty"`
	// evaluationInterval is the default rule evaluation interval.
	// +optional
	// +kubebuilder:default:="30s"
	// +kubebuilder:validation:Format:=duration
	EvaluationInterval *metav1.Duration `json:"evaluationInterval,omitempty"`
	// scrapeProtocols are the protocols to negotiate, most preferred first.
	// +optional
	// +listType=atomic
	ScrapeProtocols []string `json:"scrapeProtocols,omitempty"`
	// scrapeClasses are prometheus-operator ScrapeClass objects that monitors can reference.
	// +optional
	// +listType=atomic
	// +kubebuilder:pruning:PreserveUnknownFields
	ScrapeClasses []AnyConfig `json:"scrapeClasses,omitempty"`

	// denyFSAccessThroughSMs refuses ServiceMonitors and PodMonitors that
	// make the collectors read their own files (bearerTokenFile, tlsConfig's
	// caFile, certFile and keyFile): such a monitor would send the
	// collector's ServiceAccount token, or any file it can read, to the
	// monitor author's target. A refused monitor is a Warning event and a
	// metric; the others keep being served. Unset, it is true when the
	// allocator discovers monitors outside its own namespace (upstream's
	// default is false) and false when it reads only its own namespace.
	// +optional
	DenyFSAccessThroughSMs *bool `json:"denyFSAccessThroughSMs,omitempty"`

	PrometheusCRTenancy `json:",inline"`
}

// +kubebuilder:validation:XValidation:rule="!has(self.topologySpreadConstraints)",message="topologySpreadConstraints is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.telemetry)",message="telemetry is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || self.replicas <= 1 || !has(self.allocationStrategy) || self.allocationStrategy != 'least-weighted'",message="allocationStrategy least-weighted depends on each allocator's history, so several replicas would serve different assignments: use replicas 1, or consistent-hashing"

// TargetAllocatorEmbedded configures the target allocator of a collector.
type TargetAllocatorEmbedded struct {
	// enabled deploys a target allocator for the collector's prometheus receiver.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// replicas is the number of allocator pods. With consistent-hashing,
	// ordinal and per-node the assignment is a function of the targets and collectors
	// only, so replicas serve identical assignments; least-weighted depends on
	// each allocator's history, so it is refused with more than one replica.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`
	// image is the allocator image; empty means the operator's default.
	// +optional
	Image string `json:"image,omitempty"`
	// allocationStrategy is how targets are assigned to collectors.
	// +optional
	// +kubebuilder:default:=consistent-hashing
	AllocationStrategy TargetAllocatorAllocationStrategy `json:"allocationStrategy,omitempty"`
	// filterStrategy is how targets are filtered before assignment: relabel-config
	// drops targets the job's relabel_configs drop; none (or empty) keeps all.
	// +optional
	// +kubebuilder:default:=relabel-config
	FilterStrategy TargetAllocatorFilterStrategy `json:"filterStrategy,omitempty"`
	// serviceAccount names an existing service account for the allocator pods.
	// When set, the operator creates no service account and no RBAC for it.
	// +optional
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// nodeSelector schedules the allocator pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// resources of the allocator container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// affinity of the allocator pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// tolerations of the allocator pods.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// env of the allocator container.
	// +optional
	// +listType=atomic
	Env []corev1.EnvVar `json:"env,omitempty"`
	// prometheusCR configures discovery of prometheus-operator resources.
	// +optional
	PrometheusCR TargetAllocatorPrometheusCR `json:"prometheusCR,omitempty"`
	// podDisruptionBudget of the allocator; by default one pod may be unavailable.
	// +optional
	PodDisruptionBudget *PodDisruptionBudgetSpec `json:"podDisruptionBudget,omitempty"`
	// allowInsecureAuthSecrets serves secrets in scrape configs over plain HTTP.
	// Only for endpoints protected by a service mesh or similar.
	// +optional
	AllowInsecureAuthSecrets bool `json:"allowInsecureAuthSecrets,omitempty"`
	// collectorNotReadyGracePeriod is how long a not-ready collector keeps its targets.
	// +optional
	// +kubebuilder:default:="30s"
	// +kubebuilder:validation:Format:=duration
	CollectorNotReadyGracePeriod *metav1.Duration `json:"collectorNotReadyGracePeriod,omitempty"`
	// collectorTargetReloadInterval is how often the collectors' prometheus
	// receivers poll the allocator for their targets.
	// +optional
	// +kubebuilder:default:="30s"
	// +kubebuilder:validation:Format:=duration
	CollectorTargetReloadInterval *metav1.Duration `json:"collectorTargetReloadInterval,omitempty"`

	// securityContext of the allocator container. The operator fills the
	// fields left unset with the restricted Pod Security Standard's, but none
	// that contradicts what is set.
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
	// podSecurityContext of the allocator pods. The operator fills in
	// runAsNonRoot and the RuntimeDefault seccomp profile where they are
	// unset and do not contradict what is set (runAsUser 0).
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`
	// topologySpreadConstraints is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +listType=atomic
	TopologySpreadConstraints []runtime.RawExtension `json:"topologySpreadConstraints,omitempty"`
	// observability.metrics.enableMetrics creates a ServiceMonitor for the
	// allocator's metrics, as on a TargetAllocator.
	// +optional
	Observability ObservabilitySpec `json:"observability,omitempty"`
	// mtls secures the allocator's API with mutual TLS: see TargetAllocatorMTLS.
	// +optional
	Mtls *TargetAllocatorMTLS `json:"mtls,omitempty"`
	// telemetry is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Telemetry *runtime.RawExtension `json:"telemetry,omitempty"`
}
