package sidecar

import (
	"errors"
	"fmt"
	"regexp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardwise/shardwise/apis/v1beta1"
)

// Result is what happened to a pod; the values are the metric's result label.
type Result string

// The results.
const (
	// NotRequested: no annotation asks for or refuses a sidecar.
	NotRequested Result = "not-requested"
	// Injected: the sidecar was added.
	Injected Result = "injected"
	// AlreadyInjected: the pod already carries the sidecar this package
	// injects (a pod spec copied from an injected pod); nothing changed.
	AlreadyInjected Result = "already-injected"
	// Conflict: the pod has its own container named otc-container; it is
	// kept and no sidecar is added.
	Conflict Result = "name-conflict"
	// Clash: the collector's volumes or init containers would clash by name
	// with the pod's (or a volume mount would name no volume), which the API
	// server would refuse; no sidecar is added and the pod is admitted as
	// it is.
	Clash Result = "pod-conflict"
	// OptedOut: the annotation says "false"; nothing to remove.
	OptedOut Result = "opted-out"
	// Removed: the annotation says "false" and the pod carried an injected
	// sidecar, which was removed.
	Removed Result = "removed"
	// NotFound: the named collector does not exist, or "true" found none.
	NotFound Result = "not-found"
	// Ambiguous: "true" and several sidecar-mode collectors.
	Ambiguous Result = "ambiguous"
	// NotSidecar: the named collector's mode is not sidecar.
	NotSidecar Result = "not-sidecar"
	// Failed: the collector could not be read, or its configuration not
	// rendered.
	Failed Result = "failed"
)

// Outcome reports what Mutate did.
type Outcome struct {
	Request Request
	Result  Result
	// Collector is "<namespace>/<name>" of the resolved collector.
	Collector string
	// Reason says why nothing was injected; empty when there is nothing to
	// report.
	Reason string
}

// Owner is one object of the pod's owner chain (ReplicaSet, Deployment,
// StatefulSet, DaemonSet, Job, CronJob), as the caller resolved it.
type Owner struct {
	Kind string
	Name string
	UID  types.UID
}

// Input is what the mutator needs besides the pod.
type Input struct {
	// Namespace is the pod's namespace: its name and annotations.
	Namespace metav1.ObjectMeta
	// Collector is the collector the request resolved to; nil when it did
	// not resolve.
	Collector *v1beta1.OpenTelemetryCollector
	// Unresolved says why the request did not resolve, wrapping ErrNotFound,
	// ErrNoCollector, ErrAmbiguous or ErrNotSidecar when it is one of those.
	Unresolved error
	// Owners is the pod's owner chain, nearest first.
	Owners []Owner
}

// Settings are the operator-level choices.
type Settings struct {
	// Image is the collector image for collectors that name none.
	Image string
	// NativeSidecar adds the sidecar as an init container with restartPolicy
	// Always (Kubernetes 1.29 and later) instead of a regular container.
	NativeSidecar bool
}

// Present reports whether the pod has a container named otc-container,
// regular or init, which blocks an injection (container names are unique
// across both lists).
func Present(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.Containers, isCollector) || slices.ContainsFunc(pod.Spec.InitContainers, isCollector)
}

func isCollector(c corev1.Container) bool { return c.Name == ContainerName }

// injected reports whether c is a sidecar this package added to a pod
// carrying the injected label: a user's own otc-container is never taken
// for one.
func injected(pod *corev1.Pod, c corev1.Container) bool {
	if !isCollector(c) || pod.Labels[LabelInjected] == "" {
		return false
	}
	return envIndex(c.Env, EnvConfig) >= 0 && slices.Contains(c.Args, configArg)
}

// Mutate does what the pod's annotations ask for and reports it. The pod is
// changed only for the results Injected and Removed. Mutate never panics.
func Mutate(pod *corev1.Pod, in Input, s Settings) Outcome {
	req := Requested(in.Namespace, pod)
	out := Outcome{Request: req}
	switch req.Action {
	case None:
		out.Result = NotRequested
		return out
	case Refuse:
		out.Result = OptedOut
		if remove(pod) {
			out.Result = Removed
		}
		return out
	}
	if Present(pod) {
		if slices.ContainsFunc(append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...), func(c corev1.Container) bool { return injected(pod, c) }) {
			out.Result = AlreadyInjected
			return out
		}
		out.Result = Conflict
		out.Reason = fmt.Sprintf("the pod already has a container named %s; it is kept and no sidecar is added", ContainerName)
		return out
	}
	if req.Malformed() {
		out.Result = NotFound
		out.Reason = fmt.Sprintf("no sidecar injected: %q is not true, <name> or <namespace>/<name>", req.Value)
		return out
	}
	c := in.Collector
	if c == nil {
		out.Result = unresolvedResult(in.Unresolved)
		out.Reason = "no sidecar injected"
		if in.Unresolved != nil {
			out.Reason = fmt.Sprintf("no sidecar injected: %v", in.Unresolved)
		}
		return out
	}
	out.Collector = c.Namespace + "/" + c.Name
	if c.Spec.Mode != v1beta1.ModeSidecar {
		out.Result = NotSidecar
		out.Reason = fmt.Sprintf("no sidecar injected: OpenTelemetryCollector %s has mode %q: %v", out.Collector, c.Spec.Mode, ErrNotSidecar)
		return out
	}
	container, err := Container(c, in.Namespace.Name, pod.Spec.SecurityContext, in.Owners, s)
	if err != nil {
		out.Result = Failed
		out.Reason = fmt.Sprintf("no sidecar injected from OpenTelemetryCollector %s: %v", out.Collector, err)
		return out
	}
	volumes := Volumes(c)
	inits := make([]corev1.Container, len(c.Spec.InitContainers))
	for i := range c.Spec.InitContainers {
		inits[i] = *c.Spec.InitContainers[i].DeepCopy()
	}
	if err := clash(pod, container, volumes, inits); err != nil {
		out.Result = Clash
		out.Reason = fmt.Sprintf("no sidecar injected from OpenTelemetryCollector %s: %v", out.Collector, err)
		return out
	}
	// As upstream: the collector's init containers run before the pod's
	// native sidecar, its volumes follow the pod's.
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, inits...)
	if s.NativeSidecar {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, container)
	} else {
		pod.Spec.Containers = append(pod.Spec.Containers, container)
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, volumes...)
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[LabelInjected] = labelValue(c.Namespace, c.Name)
	out.Result = Injected
	return out
}

// clash reports why adding the sidecar, the collector's volumes and init
// containers to pod would make a pod the API server refuses: a volume or
// container name used twice, or a sidecar volume mount naming no volume.
// Upstream appends blindly and the pod is then refused; here it is admitted
// without the sidecar, and the reason reported.
func clash(pod *corev1.Pod, sidecar corev1.Container, volumes []corev1.Volume, inits []corev1.Container) error {
	have := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		have[v.Name] = true
	}
	for _, v := range volumes {
		if have[v.Name] {
			return fmt.Errorf("the pod already has a volume named %q, which the collector's volumes or configmaps also use", v.Name)
		}
		have[v.Name] = true
	}
	for _, m := range sidecar.VolumeMounts {
		if !have[m.Name] {
			return fmt.Errorf("the collector's volumeMounts name volume %q, which neither the pod nor the collector's volumes declare", m.Name)
		}
	}
	names := map[string]bool{ContainerName: true}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			names[c.Name] = true
		}
	}
	for _, c := range inits {
		if names[c.Name] {
			return fmt.Errorf("the pod already has a container named %q, which the collector's initContainers also use", c.Name)
		}
		names[c.Name] = true
	}
	return nil
}

func unresolvedResult(err error) Result {
	switch {
	case errors.Is(err, ErrAmbiguous):
		return Ambiguous
	case errors.Is(err, ErrNotSidecar):
		return NotSidecar
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrNoCollector):
		return NotFound
	default:
		return Failed
	}
}

// remove drops a sidecar this package injected, and the label, and reports
// whether it did.
func remove(pod *corev1.Pod) bool {
	mine := func(c corev1.Container) bool { return injected(pod, c) }
	if !slices.ContainsFunc(pod.Spec.Containers, mine) && !slices.ContainsFunc(pod.Spec.InitContainers, mine) {
		return false
	}
	pod.Spec.Containers = slices.DeleteFunc(pod.Spec.Containers, mine)
	pod.Spec.InitContainers = slices.DeleteFunc(pod.Spec.InitContainers, mine)
	delete(pod.Labels, LabelInjected)
	return true
}

var (
	trailingNonAlnum = regexp.MustCompile(`[^A-Za-z0-9]+$`)
	leadingNonAlnum  = regexp.MustCompile(`^[^A-Za-z0-9]+`)
)

// labelValue is "<namespace>.<name>" cut to a label value's 63 characters
// as upstream's naming.Truncate does: the namespace is shortened first, then
// the name, and the ends are trimmed to alphanumerics.
func labelValue(namespace, name string) string {
	const maxLen = 63
	if excess := len(namespace) + 1 + len(name) - maxLen; excess > 0 {
		cut := min(excess, len(namespace))
		namespace = namespace[:len(namespace)-cut]
		excess -= cut
		name = name[:len(name)-min(excess, len(name))]
	}
	v := namespace + "." + name
	if len(v) > maxLen {
		v = v[:maxLen]
	}
	return leadingNonAlnum.ReplaceAllString(trailingNonAlnum.ReplaceAllString(v, ""), "")
}
