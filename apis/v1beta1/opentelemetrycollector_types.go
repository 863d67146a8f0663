package v1beta1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=otelcol;otelcols
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.scale.replicas,selectorpath=.status.scale.selector
// +kubebuilder:printcolumn:name="Mode",type="string",JSONPath=".spec.mode",description="Deployment mode"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.scale.statusReplicas",description="Ready/desired pods"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Version",type="string",JSONPath=".status.version",description="Collector version, from the image tag"
// +kubebuilder:printcolumn:name="Image",type="string",JSONPath=".status.image"
// +kubebuilder:printcolumn:name="Management",type="string",JSONPath=".spec.managementState",description="Management state",priority=1

// OpenTelemetryCollector is a fleet of OpenTelemetry Collectors, optionally
// sharding Prometheus scraping through a target allocator.
type OpenTelemetryCollector struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired collector fleet.
	// +required
	Spec OpenTelemetryCollectorSpec `json:"spec"`
	// status is the observed state of the fleet.
	// +optional
	Status OpenTelemetryCollectorStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// OpenTelemetryCollectorList is a list of OpenTelemetryCollector.
type OpenTelemetryCollectorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OpenTelemetryCollector `json:"items"`
}

// +kubebuilder:validation:XValidation:rule="!has(self.targetAllocator) || !has(self.targetAllocator.enabled) || !self.targetAllocator.enabled || self.mode == 'statefulset' || (self.mode == 'daemonset' && has(self.targetAllocator.allocationStrategy) && self.targetAllocator.allocationStrategy == 'per-node')",message="the target allocator needs mode statefulset, or mode daemonset with allocationStrategy per-node"
// +kubebuilder:validation:XValidation:rule="!has(self.targetAllocator) || !has(self.targetAllocator.allocationStrategy) || self.targetAllocator.allocationStrategy != 'per-node' || self.mode == 'daemonset'",message="allocationStrategy per-node needs mode daemonset"
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
// +kubebuilder:validation:XValidation:rule="!has(self.podDnsConfig)",message="podDnsConfig is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.dnsPolicy)",message="dnsPolicy is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.ipFamilies)",message="ipFamilies is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.ipFamilyPolicy)",message="ipFamilyPolicy is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.trafficDistribution)",message="trafficDistribution is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.persistentVolumeClaimRetentionPolicy)",message="persistentVolumeClaimRetentionPolicy is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaler)",message="autoscaler is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.ingress)",message="ingress is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.httpRoute)",message="httpRoute is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.networkPolicy)",message="networkPolicy is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.livenessProbe)",message="livenessProbe is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.readinessProbe)",message="readinessProbe is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.startupProbe)",message="startupProbe is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.observability)",message="observability is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.configmaps)",message="configmaps is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.daemonSetUpdateStrategy)",message="daemonSetUpdateStrategy is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.deploymentUpdateStrategy)",message="deploymentUpdateStrategy is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.command)",message="command is an upstream field shardwise does not support; remove it"

// OpenTelemetryCollectorSpec is the desired state of an OpenTelemetryCollector.
type OpenTelemetryCollectorSpec struct {
	// managementState says whether the operator reconciles this collector.
	// +optional
	// +kubebuilder:default:=managed
	ManagementState ManagementStateType `json:"managementState,omitempty"`
	// mode is how the collector is deployed. Only statefulset is implemented;
	// the other modes are accepted and reported as not supported in the Ready condition.
	// +optional
	// +kubebuilder:default:=deployment
	Mode Mode `json:"mode,omitempty"`
	// upgradeStrategy is accepted for compatibility; shardwise has no version migrations.
	// +optional
	UpgradeStrategy UpgradeStrategy `json:"upgradeStrategy,omitempty"`
	// replicas is the number of collector pods. It defaults to 1 in the
	// schema, as upstream, so that the scale subresource (kubectl scale, a
	// HorizontalPodAutoscaler) works on a collector that does not set it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default:=1
	Replicas *int32 `json:"replicas,omitempty"`
	// image is the collector image; empty means the operator's default.
	// +optional
	Image string `json:"image,omitempty"`
	// imagePullPolicy of the collector container.
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// serviceAccount names an existing service account for the collector pods.
	// When empty, the operator creates one.
	// +optional
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// args are extra collector arguments, passed as --key=value.
	// +optional
	Args map[string]string `json:"args,omitempty"`
	// resources of the collector container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// env of the collector container. POD_NAME is always set.
	// +optional
	// +listType=atomic
	Env []corev1.EnvVar `json:"env,omitempty"`
	// nodeSelector schedules the collector pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// tolerations of the collector pods.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// affinity of the collector pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// podAnnotations are added to the collector pods.
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`
	// podDisruptionBudget of the collector; by default one pod may be unavailable.
	// +optional
	PodDisruptionBudget *PodDisruptionBudgetSpec `json:"podDisruptionBudget,omitempty"`
	// serviceName is the governing Service of the StatefulSet; by default the
	// headless Service <name>-collector-headless the operator creates.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`
	// podManagementPolicy of the StatefulSet; Parallel by default.
	// +optional
	// +kubebuilder:validation:Enum=OrderedReady;Parallel
	PodManagementPolicy appsv1.PodManagementPolicyType `json:"podManagementPolicy,omitempty"`
	// volumeClaimTemplates of the StatefulSet.
	// +optional
	// +listType=atomic
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`
	// config is the collector configuration. Component configurations are free
	// form; write empty components as {}.
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	Config Config `json:"config"`
	// configVersions is how many rendered configurations (ConfigMaps) to keep.
	// +optional
	// +kubebuilder:default:=3
	// +kubebuilder:validation:Minimum=1
	ConfigVersions *int32 `json:"configVersions,omitempty"`
	// targetAllocator configures the target allocator.
	// +optional
	TargetAllocator TargetAllocatorEmbedded `json:"targetAllocator,omitempty"`
	// securityContext of the collector container. When unset, the operator
	// sets a restricted one (no privilege escalation, every capability
	// dropped, non-root); when set, it is used as given.
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
	// podSecurityContext of the collector pods. When unset, the operator sets
	// runAsNonRoot and the RuntimeDefault seccomp profile; when set, it is used
	// as given.
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`

	UnsupportedPodFields `json:",inline"`

	// persistentVolumeClaimRetentionPolicy is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	PersistentVolumeClaimRetentionPolicy *runtime.RawExtension `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
	// autoscaler is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Autoscaler *runtime.RawExtension `json:"autoscaler,omitempty"`
	// ingress is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Ingress *runtime.RawExtension `json:"ingress,omitempty"`
	// httpRoute is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	HTTPRoute *runtime.RawExtension `json:"httpRoute,omitempty"`
	// networkPolicy is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	NetworkPolicy *runtime.RawExtension `json:"networkPolicy,omitempty"`
	// livenessProbe is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	LivenessProbe *runtime.RawExtension `json:"livenessProbe,omitempty"`
	// readinessProbe is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	ReadinessProbe *runtime.RawExtension `json:"readinessProbe,omitempty"`
	// startupProbe is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	StartupProbe *runtime.RawExtension `json:"startupProbe,omitempty"`
	// observability is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Observability *runtime.RawExtension `json:"observability,omitempty"`
	// configmaps is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +listType=atomic
	Configmaps []runtime.RawExtension `json:"configmaps,omitempty"`
	// daemonSetUpdateStrategy is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	DaemonSetUpdateStrategy *runtime.RawExtension `json:"daemonSetUpdateStrategy,omitempty"`
	// deploymentUpdateStrategy is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	DeploymentUpdateStrategy *runtime.RawExtension `json:"deploymentUpdateStrategy,omitempty"`
	// command is not supported by shardwise: setting it is rejected.
	// +optional
	// +listType=atomic
	Command []string `json:"command,omitempty"`
}

// UnsupportedPodFields are the upstream workload fields shardwise does not
// implement. Each is rejected by a rule on the spec that embeds it.
type UnsupportedPodFields struct {
	// volumeMounts is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +listType=atomic
	VolumeMounts []runtime.RawExtension `json:"volumeMounts,omitempty"`
	// ports is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +listType=atomic
	Ports []runtime.RawExtension `json:"ports,omitempty"`
	// envFrom is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +listType=atomic
	EnvFrom []runtime.RawExtension `json:"envFrom,omitempty"`
	// volumes is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +listType=atomic
	Volumes []runtime.RawExtension `json:"volumes,omitempty"`
	// lifecycle is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Lifecycle *runtime.RawExtension `json:"lifecycle,omitempty"`
	// terminationGracePeriodSeconds is not supported by shardwise: setting it is rejected.
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// topologySpreadConstraints is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +listType=atomic
	TopologySpreadConstraints []runtime.RawExtension `json:"topologySpreadConstraints,omitempty"`
	// hostNetwork is not supported by shardwise: setting it is rejected.
	// +optional
	HostNetwork *bool `json:"hostNetwork,omitempty"`
	// hostPID is not supported by shardwise: setting it is rejected.
	// +optional
	HostPID *bool `json:"hostPID,omitempty"`
	// shareProcessNamespace is not supported by shardwise: setting it is rejected.
	// +optional
	ShareProcessNamespace *bool `json:"shareProcessNamespace,omitempty"`
	// priorityClassName is not supported by shardwise: setting it is rejected.
	// +optional
	PriorityClassName *string `json:"priorityClassName,omitempty"`
	// initContainers is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +listType=atomic
	InitContainers []runtime.RawExtension `json:"initContainers,omitempty"`
	// additionalContainers is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +listType=atomic
	AdditionalContainers []runtime.RawExtension `json:"additionalContainers,omitempty"`
	// podDnsConfig is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	PodDNSConfig *runtime.RawExtension `json:"podDnsConfig,omitempty"`
	// dnsPolicy is not supported by shardwise: setting it is rejected.
	// +optional
	DNSPolicy *string `json:"dnsPolicy,omitempty"`
	// ipFamilies is not supported by shardwise: setting it is rejected.
	// +optional
	// +listType=atomic
	IPFamilies []string `json:"ipFamilies,omitempty"`
	// ipFamilyPolicy is not supported by shardwise: setting it is rejected.
	// +optional
	IPFamilyPolicy *string `json:"ipFamilyPolicy,omitempty"`
	// trafficDistribution is not supported by shardwise: setting it is rejected.
	// +optional
	TrafficDistribution *string `json:"trafficDistribution,omitempty"`
}

// ScaleSubresourceStatus is the status the scale subresource reads.
type ScaleSubresourceStatus struct {
	// selector is the label selector of the collector pods, in string form.
	// +optional
	Selector string `json:"selector,omitempty"`
	// replicas is the number of collector pods.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// statusReplicas is "ready/total" collector pods.
	// +optional
	StatusReplicas string `json:"statusReplicas,omitempty"`
}

// OpenTelemetryCollectorStatus is the observed state of an OpenTelemetryCollector.
type OpenTelemetryCollectorStatus struct {
	// scale is read by the scale subresource.
	// +optional
	Scale ScaleSubresourceStatus `json:"scale,omitempty"`
	// version of the collector, from its image tag when that is a version.
	// +optional
	Version string `json:"version,omitempty"`
	// image of the collector container.
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
