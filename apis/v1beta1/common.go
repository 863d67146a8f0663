package v1beta1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Mode is how the collector is deployed.
//
// +kubebuilder:validation:Enum=daemonset;deployment;sidecar;statefulset
type Mode string

// The collector modes of the upstream API.
const (
	ModeDaemonSet   Mode = "daemonset"
	ModeDeployment  Mode = "deployment"
	ModeSidecar     Mode = "sidecar"
	ModeStatefulSet Mode = "statefulset"
)

// ManagementStateType says whether the operator manages a resource.
//
// +kubebuilder:validation:Enum=managed;unmanaged
type ManagementStateType string

const (
	// ManagementStateManaged is a resource the operator reconciles.
	ManagementStateManaged ManagementStateType = "managed"
	// ManagementStateUnmanaged is a resource the operator leaves alone.
	ManagementStateUnmanaged ManagementStateType = "unmanaged"
)

// UpgradeStrategy is how the upstream operator upgrades a resource when it
// is upgraded itself. shardwise has no version migrations, so both values
// behave the same.
//
// +kubebuilder:validation:Enum=automatic;none
type UpgradeStrategy string

const (
	// UpgradeStrategyAutomatic upgrades the resource automatically.
	UpgradeStrategyAutomatic UpgradeStrategy = "automatic"
	// UpgradeStrategyNone leaves the resource as it is.
	UpgradeStrategyNone UpgradeStrategy = "none"
)

// PodDisruptionBudgetSpec is the disruption budget of a workload. With neither
// field set, one pod may be unavailable.
type PodDisruptionBudgetSpec struct {
	// minAvailable is the number or percentage of pods that must stay available.
	// +optional
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`
	// maxUnavailable is the number or percentage of pods that may be unavailable.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// PortsSpec is a port of the collector container and Services, in addition
// to those inferred from the configuration.
type PortsSpec struct {
	// hostPort binds the container port on the node.
	// +optional
	HostPort int32 `json:"hostPort,omitempty"`

	corev1.ServicePort `json:",inline"`
}

// ConfigMapsSpec is a ConfigMap mounted into the collector container.
type ConfigMapsSpec struct {
	// name of the ConfigMap, in the collector's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// mountpath is the directory under /var/conf where the ConfigMap's
	// directory configmap-<name> is mounted.
	// +required
	MountPath string `json:"mountpath"`
}

// Probe tunes a probe of the collector container; the handler comes from the
// health_check extension.
type Probe struct {
	// initialDelaySeconds before the first probe.
	// +optional
	// +kubebuilder:validation:Minimum=0
	InitialDelaySeconds *int32 `json:"initialDelaySeconds,omitempty"`
	// timeoutSeconds of one probe.
	// +optional
	// +kubebuilder:validation:Minimum=1
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
	// periodSeconds between probes.
	// +optional
	// +kubebuilder:validation:Minimum=1
	PeriodSeconds *int32 `json:"periodSeconds,omitempty"`
	// successThreshold is the consecutive successes after a failure that count as success.
	// +optional
	// +kubebuilder:validation:Minimum=1
	SuccessThreshold *int32 `json:"successThreshold,omitempty"`
	// failureThreshold is the consecutive failures that count as failure.
	// +optional
	// +kubebuilder:validation:Minimum=1
	FailureThreshold *int32 `json:"failureThreshold,omitempty"`
	// terminationGracePeriodSeconds after a failed probe; the pod's when unset.
	// +optional
	// +kubebuilder:validation:Minimum=1
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
}

// ObservabilitySpec configures the collector's own telemetry.
type ObservabilitySpec struct {
	// metrics configures the collector's own metrics.
	// +optional
	Metrics MetricsConfigSpec `json:"metrics,omitempty"`
}

// MetricsConfigSpec configures how the collector's own metrics are scraped.
type MetricsConfigSpec struct {
	// enableMetrics creates a ServiceMonitor (monitoring.coreos.com/v1)
	// <name>-monitoring-collector for the Service <name>-collector-monitoring,
	// or in mode sidecar a PodMonitor <name>-collector for the injected
	// collectors, when prometheus-operator's CRDs are installed.
	// +optional
	EnableMetrics bool `json:"enableMetrics,omitempty"`
	// extraLabels are added to the labels of the ServiceMonitor or
	// PodMonitor (the operator's own labels win on a clash).
	// +optional
	ExtraLabels map[string]string `json:"extraLabels,omitempty"`
	// disablePrometheusAnnotations leaves out the prometheus.io/scrape,
	// prometheus.io/port and prometheus.io/path annotations of the collector
	// pods.
	// +optional
	DisablePrometheusAnnotations bool `json:"disablePrometheusAnnotations,omitempty"`
}

// AutoscalerSpec is the HorizontalPodAutoscaler of a collector.
type AutoscalerSpec struct {
	// minReplicas is the autoscaler's lower bound; spec.replicas when unset.
	// The workload never runs fewer pods.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// maxReplicas is the autoscaler's upper bound. Without it no autoscaler
	// is created.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// behavior of the autoscaler when scaling up and down.
	// +optional
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
	// metrics are custom metrics of type Pods; use targetCPUUtilization and
	// targetMemoryUtilization for resource metrics.
	// +optional
	// +listType=atomic
	Metrics []MetricSpec `json:"metrics,omitempty"`
	// targetCPUUtilization is the average CPU utilisation (percent of the
	// request) to keep; 90 when neither target is set.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=99
	TargetCPUUtilization *int32 `json:"targetCPUUtilization,omitempty"`
	// targetMemoryUtilization is the average memory utilisation (percent of
	// the request) to keep.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=99
	TargetMemoryUtilization *int32 `json:"targetMemoryUtilization,omitempty"`
}

// MetricSpec is an autoscaler metric; only type Pods is supported, as upstream.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'Pods' && has(self.pods)",message="autoscaler metrics support only type Pods, with pods set"
type MetricSpec struct {
	// type of the metric source; Pods.
	// +required
	Type autoscalingv2.MetricSourceType `json:"type"`
	// pods is the per-pod metric and its target.
	// +optional
	Pods *autoscalingv2.PodsMetricSource `json:"pods,omitempty"`
}
