package v1beta1

// NetworkPolicySpec configures the NetworkPolicy of a collector or allocator.
type NetworkPolicySpec struct {
	// enabled creates the NetworkPolicy. Unset, a collector's means false:
	// upstream takes the default from its operand.networkpolicy feature gate
	// (on), and so would put a policy in front of every collector; a
	// TargetAllocator's means true when it discovers monitors outside its
	// own namespace.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}
