package v1beta1

import (
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Mode is how the collector is deployed.
//
// +kubebuilder:validation:Enum=daemonset;deployment;sidecar;statefulset
type Mode string

// The collector modes of the upstream API. Only ModeStatefulSet is implemented;
// the others are accepted and reported through the Ready condition.
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
