package v1alpha1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shardwise/shardwise/apis/v1beta1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=otelcol;otelcols
// +kubebuilder:deprecatedversion:warning="opentelemetry.io/v1alpha1 OpenTelemetryCollector is deprecated: use opentelemetry.io/v1beta1"
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.scale.replicas,selectorpath=.status.scale.selector
// +kubebuilder:printcolumn:name="Mode",type="string",JSONPath=".spec.mode",description="Deployment mode"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.scale.statusReplicas",description="Ready/desired pods"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Version",type="string",JSONPath=".status.version",description="Collector version, from the image tag"
// +kubebuilder:printcolumn:name="Image",type="string",JSONPath=".status.image"

// OpenTelemetryCollector is the deprecated v1alpha1 form of
// v1beta1.OpenTelemetryCollector, served so that upstream manifests written
// for it apply unchanged. Objects are stored as v1beta1; the conversion
// webhook translates between the two (see ConvertTo).
type OpenTelemetryCollector struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired collector fleet.
	// +optional
	Spec OpenTelemetryCollectorSpec `json:"spec,omitempty"`
	// status is the observed state of the fleet, as in v1beta1.
	// +optional
	Status v1beta1.OpenTelemetryCollectorStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// OpenTelemetryCollectorList is a list of OpenTelemetryCollector.
type OpenTelemetryCollectorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OpenTelemetryCollector `json:"items"`
}

// The rules of v1beta1's spec apply to v1alpha1 requests too, with the same
// messages: the API server validates an object in the version it was written
// in, before conversion. They differ from v1beta1's only where v1alpha1
// does: mode has no schema default here (absent means deployment), the
// deprecated top-level minReplicas and maxReplicas count as the
// autoscaler's bounds (conversion folds them in, the autoscaler's own
// winning), v1beta1's daemonSetUpdateStrategy is called updateStrategy, and
// an update strategy written as {} (as Go clients send the non-pointer
// struct) counts as absent, as conversion reads it.
//
// +kubebuilder:validation:XValidation:rule="!has(self.targetAllocator) || !has(self.targetAllocator.enabled) || !self.targetAllocator.enabled || (has(self.mode) ? self.mode : 'deployment') == 'statefulset' || ((has(self.mode) ? self.mode : 'deployment') == 'daemonset' && has(self.targetAllocator.allocationStrategy) && self.targetAllocator.allocationStrategy == 'per-node')",message="the target allocator needs mode statefulset, or mode daemonset with allocationStrategy per-node"
// +kubebuilder:validation:XValidation:rule="!has(self.targetAllocator) || !has(self.targetAllocator.allocationStrategy) || self.targetAllocator.allocationStrategy != 'per-node' || (has(self.mode) ? self.mode : 'deployment') == 'daemonset'",message="allocationStrategy per-node needs mode daemonset"
// +kubebuilder:validation:XValidation:rule="(has(self.mode) ? self.mode : 'deployment') != 'sidecar' || !has(self.ingress) || !has(self.ingress.type) || self.ingress.type != 'ingress'",message="the OpenTelemetry Collector mode is set to sidecar, which does not support ingress: the collector runs in the application's pods, behind no Service of its own"
// +kubebuilder:validation:XValidation:rule="(has(self.mode) ? self.mode : 'deployment') == (has(oldSelf.mode) ? oldSelf.mode : 'deployment')",messageExpression="'the OpenTelemetry Collector mode is set to ' + (has(oldSelf.mode) ? oldSelf.mode : 'deployment') + ', which does not support modification: each mode builds a different workload; delete the collector and create it with the new mode'"
// +kubebuilder:validation:XValidation:rule="(has(self.mode) ? self.mode : 'deployment') == 'statefulset' || !has(self.volumeClaimTemplates)",message="volumeClaimTemplates is only supported in mode statefulset"
// +kubebuilder:validation:XValidation:rule="(has(self.mode) ? self.mode : 'deployment') == 'daemonset' || !has(self.updateStrategy) || (!has(self.updateStrategy.type) && !has(self.updateStrategy.rollingUpdate))",message="updateStrategy is only supported in mode daemonset"
// +kubebuilder:validation:XValidation:rule="(has(self.mode) ? self.mode : 'deployment') == 'deployment' || !has(self.deploymentUpdateStrategy) || (!has(self.deploymentUpdateStrategy.type) && !has(self.deploymentUpdateStrategy.rollingUpdate))",message="deploymentUpdateStrategy is only supported in mode deployment"
// +kubebuilder:validation:XValidation:rule="(has(self.mode) ? self.mode : 'deployment') != 'sidecar' || !has(self.tolerations) || size(self.tolerations) == 0",message="the OpenTelemetry Collector mode is set to sidecar, which does not support the attribute 'tolerations'"
// +kubebuilder:validation:XValidation:rule="(has(self.mode) ? self.mode : 'deployment') != 'sidecar' || !has(self.priorityClassName) || self.priorityClassName == ''",message="the OpenTelemetry Collector mode is set to sidecar, which does not support the attribute 'priorityClassName'"
// +kubebuilder:validation:XValidation:rule="(has(self.mode) ? self.mode : 'deployment') != 'sidecar' || !has(self.affinity)",message="the OpenTelemetry Collector mode is set to sidecar, which does not support the attribute 'affinity'"
// +kubebuilder:validation:XValidation:rule="(has(self.mode) ? self.mode : 'deployment') != 'sidecar' || !has(self.additionalContainers) || size(self.additionalContainers) == 0",message="the OpenTelemetry Collector mode is set to sidecar, which does not support the attribute 'additionalContainers'"
// +kubebuilder:validation:XValidation:rule="!(has(self.autoscaler) || has(self.minReplicas) || has(self.maxReplicas)) || (has(self.mode) ? self.mode : 'deployment') == 'deployment' || (has(self.mode) ? self.mode : 'deployment') == 'statefulset'",message="autoscaler is only supported in modes deployment and statefulset: a DaemonSet runs one pod per node and a sidecar one per application pod"
// +kubebuilder:validation:XValidation:rule="!((has(self.autoscaler) && has(self.autoscaler.minReplicas)) || has(self.minReplicas)) || ((has(self.autoscaler) && has(self.autoscaler.maxReplicas)) || has(self.maxReplicas))",message="autoscaler.minReplicas needs autoscaler.maxReplicas"
// +kubebuilder:validation:XValidation:rule="!((has(self.autoscaler) && has(self.autoscaler.minReplicas)) || has(self.minReplicas)) || !((has(self.autoscaler) && has(self.autoscaler.maxReplicas)) || has(self.maxReplicas)) || ((has(self.autoscaler) && has(self.autoscaler.minReplicas)) ? self.autoscaler.minReplicas : self.minReplicas) <= ((has(self.autoscaler) && has(self.autoscaler.maxReplicas)) ? self.autoscaler.maxReplicas : self.maxReplicas)",message="autoscaler.minReplicas must not exceed autoscaler.maxReplicas"
// +kubebuilder:validation:XValidation:rule="!((has(self.autoscaler) && has(self.autoscaler.maxReplicas)) || has(self.maxReplicas)) || !has(self.replicas) || self.replicas <= ((has(self.autoscaler) && has(self.autoscaler.maxReplicas)) ? self.autoscaler.maxReplicas : self.maxReplicas)",message="replicas must not exceed autoscaler.maxReplicas"
// +kubebuilder:validation:XValidation:rule="(has(self.mode) ? self.mode : 'deployment') == 'deployment' || (has(self.mode) ? self.mode : 'deployment') == 'statefulset' || !has(self.podDisruptionBudget)",message="podDisruptionBudget is only supported in modes deployment and statefulset: a DaemonSet has no disruption budget, a sidecar belongs to its application pod"

// OpenTelemetryCollectorSpec is upstream's v1alpha1 spec: the collector
// configuration is a YAML string, the autoscaler bounds may also be given at
// the top level, and pod fields added in v1beta1 are absent.
type OpenTelemetryCollectorSpec struct {
	// managementState says whether the operator reconciles this collector.
	// +optional
	// +kubebuilder:default:=managed
	ManagementState v1beta1.ManagementStateType `json:"managementState,omitempty"`
	// resources of the collector container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// nodeSelector schedules the collector pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// args are extra collector arguments, passed as --key=value.
	// +optional
	Args map[string]string `json:"args,omitempty"`
	// replicas is the number of collector pods.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`
	// minReplicas is deprecated: use autoscaler.minReplicas.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// maxReplicas is deprecated: use autoscaler.maxReplicas.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// autoscaler creates a HorizontalPodAutoscaler, as in v1beta1.
	// +optional
	Autoscaler *v1beta1.AutoscalerSpec `json:"autoscaler,omitempty"`
	// podDisruptionBudget of the collector.
	// +optional
	PodDisruptionBudget *v1beta1.PodDisruptionBudgetSpec `json:"podDisruptionBudget,omitempty"`
	// securityContext of the collector container.
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
	// podSecurityContext of the collector pods.
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`
	// podAnnotations are added to the collector pods.
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`
	// targetAllocator configures the target allocator.
	// +optional
	TargetAllocator OpenTelemetryTargetAllocator `json:"targetAllocator,omitempty"`
	// mode is how the collector is deployed; deployment by default.
	// +optional
	Mode v1beta1.Mode `json:"mode,omitempty"`
	// serviceAccount names an existing service account for the collector pods.
	// +optional
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// image is the collector image; empty means the operator's default.
	// +optional
	Image string `json:"image,omitempty"`
	// upgradeStrategy is accepted for compatibility.
	// +optional
	UpgradeStrategy v1beta1.UpgradeStrategy `json:"upgradeStrategy,omitempty"`
	// imagePullPolicy of the collector container.
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// config is the collector configuration as YAML.
	// +optional
	Config string `json:"config,omitempty"`
	// volumeMounts are added to the collector container.
	// +optional
	// +listType=atomic
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
	// ports are exposed by the collector container and Services.
	// +optional
	// +listType=atomic
	Ports []v1beta1.PortsSpec `json:"ports,omitempty"`
	// env of the collector container.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// envFrom of the collector container.
	// +optional
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`
	// volumeClaimTemplates of the StatefulSet.
	// +optional
	// +listType=atomic
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`
	// tolerations of the collector pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// volumes are added to the collector pods.
	// +optional
	// +listType=atomic
	Volumes []corev1.Volume `json:"volumes,omitempty"`
	// ingress exposes the receivers through an Ingress: see v1beta1.
	// +optional
	Ingress *v1beta1.IngressSpec `json:"ingress,omitempty"`
	// hostNetwork runs the collector pods in the node's network namespace.
	// +optional
	HostNetwork bool `json:"hostNetwork,omitempty"`
	// shareProcessNamespace shares one process namespace between the containers.
	// +optional
	ShareProcessNamespace bool `json:"shareProcessNamespace,omitempty"`
	// priorityClassName of the collector pods.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// affinity of the collector pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// lifecycle of the collector container.
	// +optional
	Lifecycle *corev1.Lifecycle `json:"lifecycle,omitempty"`
	// terminationGracePeriodSeconds of the collector pods.
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// livenessProbe tunes the liveness probe of the collector container.
	// +optional
	LivenessProbe *v1beta1.Probe `json:"livenessProbe,omitempty"`
	// initContainers run before the collector container.
	// +optional
	InitContainers []corev1.Container `json:"initContainers,omitempty"`
	// additionalContainers run beside the collector container.
	// +optional
	AdditionalContainers []corev1.Container `json:"additionalContainers,omitempty"`
	// observability configures the collector's own telemetry.
	// +optional
	Observability v1beta1.ObservabilitySpec `json:"observability,omitempty"`
	// topologySpreadConstraints of the collector pods.
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// configmaps are ConfigMaps mounted into the collector container.
	// +optional
	ConfigMaps []v1beta1.ConfigMapsSpec `json:"configmaps,omitempty"`
	// updateStrategy of the DaemonSet (v1beta1: daemonSetUpdateStrategy).
	// +optional
	UpdateStrategy appsv1.DaemonSetUpdateStrategy `json:"updateStrategy,omitempty"`
	// deploymentUpdateStrategy of the Deployment.
	// +optional
	DeploymentUpdateStrategy appsv1.DeploymentStrategy `json:"deploymentUpdateStrategy,omitempty"`
}

// The rules of v1beta1's TargetAllocatorEmbedded, with its messages.
//
// +kubebuilder:validation:XValidation:rule="!has(self.topologySpreadConstraints)",message="topologySpreadConstraints is an upstream field shardwise does not support; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || self.replicas <= 1 || !has(self.allocationStrategy) || self.allocationStrategy != 'least-weighted'",message="allocationStrategy least-weighted depends on each allocator's history, so several replicas would serve different assignments: use replicas 1, or consistent-hashing"

// OpenTelemetryTargetAllocator is upstream's v1alpha1 target allocator of a
// collector: the monitor selectors are label maps.
type OpenTelemetryTargetAllocator struct {
	// replicas of the target allocator.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// nodeSelector schedules the target allocator pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// resources of the target allocator container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// allocationStrategy of the target allocator.
	// +optional
	// +kubebuilder:validation:Enum=least-weighted;consistent-hashing;per-node;ordinal
	AllocationStrategy v1beta1.TargetAllocatorAllocationStrategy `json:"allocationStrategy,omitempty"`
	// filterStrategy of the target allocator.
	// +optional
	FilterStrategy v1beta1.TargetAllocatorFilterStrategy `json:"filterStrategy,omitempty"`
	// serviceAccount names an existing service account for the target allocator.
	// +optional
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// image of the target allocator.
	// +optional
	Image string `json:"image,omitempty"`
	// enabled creates the target allocator.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// affinity of the target allocator pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// prometheusCR configures ServiceMonitor and PodMonitor discovery.
	// +optional
	PrometheusCR OpenTelemetryTargetAllocatorPrometheusCR `json:"prometheusCR,omitempty"`
	// securityContext of the target allocator container.
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
	// podSecurityContext of the target allocator pods.
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`
	// topologySpreadConstraints is not supported by shardwise: setting it is rejected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +listType=atomic
	TopologySpreadConstraints []runtime.RawExtension `json:"topologySpreadConstraints,omitempty"`
	// tolerations of the target allocator pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// env of the target allocator container.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// observability.metrics.enableMetrics creates a ServiceMonitor for the
	// allocator's metrics, as on a TargetAllocator.
	// +optional
	Observability v1beta1.ObservabilitySpec `json:"observability,omitempty"`
	// podDisruptionBudget of the target allocator.
	// +optional
	PodDisruptionBudget *v1beta1.PodDisruptionBudgetSpec `json:"podDisruptionBudget,omitempty"`
}

// OpenTelemetryTargetAllocatorPrometheusCR is upstream's v1alpha1
// prometheusCR: the monitor selectors are label maps (matchLabels).
type OpenTelemetryTargetAllocatorPrometheusCR struct {
	// enabled turns on ServiceMonitor and PodMonitor discovery.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// scrapeInterval is the default scrape interval of discovered jobs.
	// +optional
	// +kubebuilder:validation:Format:=duration
	ScrapeInterval *metav1.Duration `json:"scrapeInterval,omitempty"`
	// podMonitorSelector selects PodMonitors by label; empty selects all.
	// +optional
	PodMonitorSelector map[string]string `json:"podMonitorSelector,omitempty"`
	// serviceMonitorSelector selects ServiceMonitors by label; empty selects all.
	// +optional
	ServiceMonitorSelector map[string]string `json:"serviceMonitorSelector,omitempty"`

	// The multi-tenancy switches of v1beta1 (shardwise's; upstream has none).
	v1beta1.PrometheusCRTenancy `json:",inline"`
}
