package allocation

import (
	"errors"
	"time"
)

// Strategy names, as in the OpenTelemetry Operator's targetallocator.yaml.
const (
	ConsistentHashing = "consistent-hashing"
	LeastWeighted     = "least-weighted"
	PerNode           = "per-node"
	// Ordinal is shardwise's own: nested balanced shares over the ordinals
	// of a StatefulSet's collector pods (see ordinal.go).
	Ordinal = "ordinal"
)

// DefaultEpsilon is the default load bound: no collector holds more than
// ceil((1+ε)·T/N) targets.
const DefaultEpsilon = 0.05

// ErrUnknownStrategy is returned for a strategy name this package does not know.
var ErrUnknownStrategy = errors.New("unknown allocation strategy")

// Target is one scrape target. Targets are immutable once handed to an
// Allocator: a change in labels is a new Target with the same Hash.
type Target struct {
	// Job is the scrape job (scrape config) the target belongs to.
	Job string
	// Hash is the target identity: a hash of the job and the target's labels
	// after relabeling. Two targets of one job with equal Hash are one target.
	Hash uint64
	// Address is the value of __address__, served in "targets".
	Address string
	// Labels are the discovered labels before relabeling, served to the
	// collector, which relabels itself.
	Labels Discovered
	// Node is the Kubernetes node the target runs on, "" when unknown. Only the
	// per-node strategy reads it; discovery fills it from the
	// Kubernetes service-discovery labels.
	Node string
	// Weight is the target's scrape cost relative to others (say, its
	// samples per scrape); 0 counts as 1. With any weight above 1,
	// consistent-hashing bounds each collector's weight instead of its
	// target count. Discovery takes it from the __shardwise_weight label
	// after relabeling.
	Weight uint32
	// instance is the target's instance label after relabeling when it is
	// not Address (a pointer: most targets have none, and the field then
	// costs 8 bytes instead of a string's 16).
	instance *string
}

// Instance is the target's instance label after relabeling (its relabeled
// address unless a rule sets instance): how a metrics backend names it, for
// weights learned from the samples it reports.
func (t *Target) Instance() string {
	if t.instance != nil {
		return *t.instance
	}
	return t.Address
}

// SetInstance sets what Instance returns.
func (t *Target) SetInstance(instance string) {
	t.instance = nil
	if instance != t.Address {
		p := new(string) // allocated only here: the parameter does not escape
		*p = instance
		t.instance = p
	}
}

// WeightLabel is the label whose value, after relabeling, is a target's
// Weight: relabel rules set it, say from a pod annotation. It is not part
// of the target's identity (a new weight does not make a new target), and
// Prometheus drops it after relabeling, as every label starting with "__".
const WeightLabel = "__shardwise_weight"

// Collector is one collector replica that can receive targets.
type Collector struct {
	// Name is the collector id, the pod name in Kubernetes.
	Name string
	// Node is the node the collector runs on, used by per-node.
	Node string
	// Draining marks a collector on its way out (its pod is terminating):
	// it gets no targets, and a Handoff keeps serving it what it held until
	// their new owners have them.
	Draining bool
}

// Options select and tune a strategy.
type Options struct {
	// Strategy is ConsistentHashing (the default when empty), LeastWeighted or PerNode.
	Strategy string
	// FallbackStrategy places targets that per-node cannot place; empty leaves
	// them unassigned. Other strategies accept a known name and ignore it
	// (Options reports it empty), as the OpenTelemetry Operator's allocator does.
	FallbackStrategy string
	// Epsilon bounds the load for consistent-hashing: no collector holds more
	// than ceil((1+Epsilon)·T/N) targets. Zero means DefaultEpsilon.
	Epsilon float64
}

// Result describes one update.
type Result struct {
	// Moved counts targets that were assigned before and after the update
	// and changed collector, plus targets that lost their collector while
	// remaining in the target set.
	Moved int
	// Min is the least number of moves the change required: the targets of
	// collectors that left, plus the share a joining collector must take to
	// respect the balance bound.
	Min int
	// Targets, Collectors and Unassigned describe the new state.
	Targets, Collectors, Unassigned int
	// Duration is the time the update took.
	Duration time.Duration
}
