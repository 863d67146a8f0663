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
// +kubebuilder:validation:XValidation:rule="self.mode != 'sidecar' || !has(self.ingress) || !has(self.ingress.type) || self.ingress.type != 'ingress'",message="the OpenTelemetry Collector mode is set to sidecar, which does not support ingress: the collector runs in the application's pods, behind no Service of its own"
// +kubebuilder:validation:XValidation:rule="!has(self.httpRoute)",message="httpRoute (Gateway API HTTPRoutes) is not supported by shardwise: route to the Service <name>-collector with your own HTTPRoute; remove it"
// +kubebuilder:validation:XValidation:rule="self.mode == oldSelf.mode",messageExpression="'the OpenTelemetry Collector mode is set to ' + oldSelf.mode + ', which does not support modification: each mode builds a different workload; delete the collector and create it with the new mode'"
// +kubebuilder:validation:XValidation:rule="self.mode == 'statefulset' || !has(self.volumeClaimTemplates)",message="volumeClaimTemplates is only supported in mode statefulset"
// +kubebuilder:validation:XValidation:rule="self.mode == 'statefulset' || !has(self.persistentVolumeClaimRetentionPolicy)",message="persistentVolumeClaimRetentionPolicy is only supported in mode statefulset"
// +kubebuilder:validation:XValidation:rule="self.mode == 'daemonset' || !has(self.daemonSetUpdateStrategy)",message="daemonSetUpdateStrategy is only supported in mode daemonset"
// +kubebuilder:validation:XValidation:rule="self.mode == 'deployment' || !has(self.deploymentUpdateStrategy)",message="deploymentUpdateStrategy is only supported in mode deployment"
// +kubebuilder:validation:XValidation:rule="self.mode != 'sidecar' || !has(self.tolerations) || size(self.tolerations) == 0",message="the OpenTelemetry Collector mode is set to sidecar, which does not support the attribute 'tolerations'"
// +kubebuilder:validation:XValidation:rule="self.mode != 'sidecar' || !has(self.priorityClassName) || self.priorityClassName == ''",message="the OpenTelemetry Collector mode is set to sidecar, which does not support the attribute 'priorityClassName'"
// +kubebuilder:validation:XValidation:rule="self.mode != 'sidecar' || !has(self.affinity)",message="the OpenTelemetry Collector mode is set to sidecar, which does not support the attribute 'affinity'"
// +kubebuilder:validation:XValidation:rule="self.mode != 'sidecar' || !has(self.additionalContainers) || size(self.additionalContainers) == 0",message="the OpenTelemetry Collector mode is set to sidecar, which does not support the attribute 'additionalContainers'"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaler) || self.mode == 'deployment' || self.mode == 'statefulset'",message="autoscaler is only supported in modes deployment and statefulset: a DaemonSet runs one pod per node and a sidecar one per application pod"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaler) || !has(self.autoscaler.minReplicas) || has(self.autoscaler.maxReplicas)",message="autoscaler.minReplicas needs autoscaler.maxReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaler) || !has(self.autoscaler.maxReplicas) || !has(self.autoscaler.minReplicas) || self.autoscaler.minReplicas <= self.autoscaler.maxReplicas",message="autoscaler.minReplicas must not exceed autoscaler.maxReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaler) || !has(self.autoscaler.maxReplicas) || !has(self.replicas) || self.replicas <= self.autoscaler.maxReplicas",message="replicas must not exceed autoscaler.maxReplicas"
// +kubebuilder:validation:XValidation:rule="self.mode == 'deployment' || self.mode == 'statefulset' || !has(self.podDisruptionBudget)",message="podDisruptionBudget is only supported in modes deployment and statefulset: a DaemonSet has no disruption budget, a sidecar belongs to its application pod"

// OpenTelemetryCollectorSpec is the desired state of an OpenTelemetryCollector.
type OpenTelemetryCollectorSpec struct {
	// managementState says whether the operator reconciles this collector.
	// +optional
	// +kubebuilder:default:=managed
	ManagementState ManagementStateType `json:"managementState,omitempty"`
	// mode is how the collector is deployed: a Deployment (the default), a
	// DaemonSet, a StatefulSet, or a sidecar container the pod webhook injects
	// into application pods. It cannot be changed after creation.
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
	// envFrom of the collector container.
	// +optional
	// +listType=atomic
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`
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
	// securityContext of the collector container. The operator fills the
	// fields left unset with the restricted Pod Security Standard's (no
	// privilege escalation, every capability dropped, non-root), but none
	// that contradicts what is set.
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
	// podSecurityContext of the collector pods. The operator fills in
	// runAsNonRoot and the RuntimeDefault seccomp profile where they are
	// unset and do not contradict what is set (runAsUser 0).
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`

	// volumeMounts are added to the collector container.
	// +optional
	// +listType=atomic
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
	// volumes are added to the collector pods.
	// +optional
	// +listType=atomic
	Volumes []corev1.Volume `json:"volumes,omitempty"`
	// ports are exposed by the collector container and Services in addition
	// to (and before) the ports inferred from the receivers in use.
	// +optional
	// +listType=atomic
	Ports []PortsSpec `json:"ports,omitempty"`
	// configmaps are ConfigMaps of the collector's namespace mounted into the
	// collector container, each as volume configmap-<name> at
	// /var/conf/<mountpath>/configmap-<name>.
	// +optional
	// +listType=atomic
	Configmaps []ConfigMapsSpec `json:"configmaps,omitempty"`
	// lifecycle of the collector container.
	// +optional
	Lifecycle *corev1.Lifecycle `json:"lifecycle,omitempty"`
	// terminationGracePeriodSeconds of the collector pods.
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// topologySpreadConstraints of the collector pods (modes deployment and
	// statefulset; a DaemonSet places one pod per node).
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// hostNetwork runs the collector pods in the node's network namespace;
	// the DNS policy then defaults to ClusterFirstWithHostNet.
	// +optional
	HostNetwork *bool `json:"hostNetwork,omitempty"`
	// hostPID runs the collector pods in the node's process namespace.
	// +optional
	HostPID *bool `json:"hostPID,omitempty"`
	// hostUsers false runs the collector pods in a user namespace of their
	// own, so root in the container is not root on the node. Workload modes
	// only.
	// +optional
	HostUsers *bool `json:"hostUsers,omitempty"`
	// hostAliases are added to the collector pods' /etc/hosts. Workload
	// modes only; not with hostNetwork.
	// +optional
	// +listType=atomic
	HostAliases []corev1.HostAlias `json:"hostAliases,omitempty"`
	// shareProcessNamespace shares one process namespace between the
	// containers of a collector pod.
	// +optional
	ShareProcessNamespace *bool `json:"shareProcessNamespace,omitempty"`
	// priorityClassName of the collector pods.
	// +optional
	PriorityClassName *string `json:"priorityClassName,omitempty"`
	// initContainers run before the collector container.
	// +optional
	// +listType=atomic
	InitContainers []corev1.Container `json:"initContainers,omitempty"`
	// additionalContainers run beside the collector container, after it.
	// +optional
	// +listType=atomic
	AdditionalContainers []corev1.Container `json:"additionalContainers,omitempty"`
	// podDnsConfig of the collector pods. With nameservers and no dnsPolicy,
	// the DNS policy is None.
	// +optional
	PodDNSConfig *corev1.PodDNSConfig `json:"podDnsConfig,omitempty"`
	// dnsPolicy of the collector pods; by default ClusterFirstWithHostNet with
	// hostNetwork, ClusterFirst otherwise.
	// +optional
	DNSPolicy *corev1.DNSPolicy `json:"dnsPolicy,omitempty"`
	// livenessProbe tunes the liveness probe of the collector container. The
	// probe itself exists only when the health_check extension is enabled.
	// +optional
	LivenessProbe *Probe `json:"livenessProbe,omitempty"`
	// readinessProbe tunes the readiness probe, as livenessProbe.
	// +optional
	ReadinessProbe *Probe `json:"readinessProbe,omitempty"`
	// startupProbe tunes the startup probe, as livenessProbe.
	// +optional
	StartupProbe *Probe `json:"startupProbe,omitempty"`
	// command overrides the collector container's entrypoint.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	Command []string `json:"command,omitempty"`
	// autoscaler creates a HorizontalPodAutoscaler (autoscaling/v2) that
	// scales the collector through its scale subresource, when maxReplicas
	// is set. Modes deployment and statefulset.
	// +optional
	Autoscaler *AutoscalerSpec `json:"autoscaler,omitempty"`
	// observability configures the collector's own telemetry.
	// +optional
	Observability ObservabilitySpec `json:"observability,omitempty"`
	// daemonSetUpdateStrategy of the DaemonSet (mode daemonset only).
	// +optional
	DaemonSetUpdateStrategy *appsv1.DaemonSetUpdateStrategy `json:"daemonSetUpdateStrategy,omitempty"`
	// deploymentUpdateStrategy of the Deployment (mode deployment only).
	// +optional
	DeploymentUpdateStrategy *appsv1.DeploymentStrategy `json:"deploymentUpdateStrategy,omitempty"`
	// persistentVolumeClaimRetentionPolicy of the StatefulSet (mode statefulset only).
	// +optional
	PersistentVolumeClaimRetentionPolicy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`

	// ipFamilies are the IP families of the collector Services (base,
	// headless and monitoring), as upstream.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:Enum=IPv4;IPv6
	IPFamilies []corev1.IPFamily `json:"ipFamilies,omitempty"`
	// ipFamilyPolicy of the collector Services (base, headless and
	// monitoring). Unset, the API server's default (SingleStack)
	// applies; upstream writes that default into the resource.
	// +optional
	// +kubebuilder:validation:Enum=SingleStack;PreferDualStack;RequireDualStack
	IPFamilyPolicy *corev1.IPFamilyPolicy `json:"ipFamilyPolicy,omitempty"`
	// trafficDistribution of the collector Services (base, headless and
	// monitoring), e.g. PreferClose; see the Service field of that name.
	// +optional
	TrafficDistribution *string `json:"trafficDistribution,omitempty"`
	// sessionAffinity of the collector Services (base, headless and
	// monitoring), as upstream: ClientIP sends a client's connections to
	// one pod.
	// +optional
	// +kubebuilder:validation:Enum=ClientIP;None
	SessionAffinity *corev1.ServiceAffinity `json:"sessionAffinity,omitempty"`
	// sessionAffinityConfig of the collector Services (the ClientIP
	// timeout), with sessionAffinity ClientIP.
	// +optional
	SessionAffinityConfig *corev1.SessionAffinityConfig `json:"sessionAffinityConfig,omitempty"`
	// ingress exposes the receivers through an Ingress <name>-ingress
	// (type ingress), as upstream. Not in mode sidecar.
	// +optional
	Ingress *IngressSpec `json:"ingress,omitempty"`
	// httpRoute (upstream: Gateway API HTTPRoutes) is not supported by
	// shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	HTTPRoute *runtime.RawExtension `json:"httpRoute,omitempty"`
	// networkPolicy creates a NetworkPolicy <name>-collector-networkpolicy
	// that admits traffic to the collector pods on their container ports
	// only, as upstream. Workload modes only.
	// +optional
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty"`
}

// UnsupportedPodFields are the upstream workload fields the TargetAllocator
// does not implement. Each is rejected by a rule on the spec that embeds it.
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
