package sidecar

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/annotation"
	"github.com/shardwise/shardwise/internal/manifests/container"
)

const (
	// Annotation on a pod or its namespace asks for a sidecar: "true" (the
	// only sidecar-mode collector of the pod's namespace), "<name>" (one in
	// the pod's namespace), "<namespace>/<name>", or "false".
	Annotation = "sidecar.opentelemetry.io/inject"
	// LabelInjected marks an injected pod with "<namespace>.<name>" of its
	// collector, as upstream.
	LabelInjected = "sidecar.opentelemetry.io/injected"
	// ContainerName is the sidecar container's name.
	ContainerName = container.Name
	// EnvConfig carries the collector configuration.
	EnvConfig = container.EnvConfig
)

// Action is what the annotations ask for.
type Action int

const (
	// None means neither the pod nor its namespace says anything.
	None Action = iota
	// Inject a sidecar of the collector the request names.
	Inject
	// Refuse a sidecar: the effective value is "false".
	Refuse
)

// Request is what a pod asks for once the pod's and its namespace's
// annotations are combined.
type Request struct {
	Action Action
	// Value is the effective annotation value.
	Value string
	// Namespace and Name name the collector of an Inject request. Name is
	// empty for "true": the only sidecar-mode collector of Namespace.
	Namespace, Name string
}

// Malformed reports an Inject request whose value names no collector, such
// as "ns/" or "/name": it resolves to nothing.
func (r Request) Malformed() bool {
	if r.Action != Inject {
		return false
	}
	return r.Namespace == "" || (r.Name == "" && !strings.EqualFold(r.Value, "true"))
}

// String is the request as a message names it.
func (r Request) String() string { return fmt.Sprintf("%s=%q", Annotation, r.Value) }

// Requested returns what the pod asks for. ns is the pod's namespace (its name
// is the pod's namespace, which the pod object may leave empty on creation).
// The pod's value wins, unless it is "true" and the namespace names a
// collector (then the namespace's wins), as upstream's annotation.go; so a
// pod's "false" overrides its namespace's "true".
func Requested(ns metav1.ObjectMeta, pod *corev1.Pod) Request {
	v := annotation.Effective(ns.Annotations[Annotation], pod.Annotations[Annotation])
	switch {
	case v == "":
		return Request{}
	case strings.EqualFold(v, "false"):
		return Request{Action: Refuse, Value: v}
	case strings.EqualFold(v, "true"):
		return Request{Action: Inject, Value: v, Namespace: ns.Name}
	}
	if namespace, name, ok := strings.Cut(v, "/"); ok {
		return Request{Action: Inject, Value: v, Namespace: namespace, Name: name}
	}
	return Request{Action: Inject, Value: v, Namespace: ns.Name, Name: v}
}

// Errors of a request that resolves to no usable collector.
var (
	// ErrNoCollector: "true" and no sidecar-mode collector in the namespace.
	ErrNoCollector = errors.New("no OpenTelemetryCollector with mode sidecar")
	// ErrAmbiguous: "true" and several sidecar-mode collectors in the namespace.
	ErrAmbiguous = errors.New("several OpenTelemetryCollectors with mode sidecar, cannot choose; name one in the annotation")
	// ErrNotFound: the named collector does not exist.
	ErrNotFound = errors.New("OpenTelemetryCollector not found")
	// ErrNotSidecar: the named collector's mode is not sidecar.
	ErrNotSidecar = errors.New("the OpenTelemetryCollector's mode is not sidecar")
)

// Choose picks the collector of a "true" request among the collectors of
// the pod's namespace: the only one with mode sidecar. It returns a pointer
// into collectors, or an error wrapping ErrNoCollector or ErrAmbiguous (which
// names the candidates, sorted).
func Choose(namespace string, collectors []v1beta1.OpenTelemetryCollector) (*v1beta1.OpenTelemetryCollector, error) {
	var found *v1beta1.OpenTelemetryCollector
	var names []string
	for i := range collectors {
		if collectors[i].Spec.Mode != v1beta1.ModeSidecar {
			continue
		}
		if found == nil {
			found = &collectors[i]
		}
		names = append(names, collectors[i].Name)
	}
	switch len(names) {
	case 0:
		return nil, fmt.Errorf("%w in namespace %s", ErrNoCollector, namespace)
	case 1:
		return found, nil
	default:
		slices.Sort(names)
		return nil, fmt.Errorf("%w (namespace %s has %s)", ErrAmbiguous, namespace, strings.Join(names, ", "))
	}
}
