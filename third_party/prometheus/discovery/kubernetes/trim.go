// Added by shardwise (third_party/prometheus.sh; why: third_party/README.md).

package kubernetes

import (
	"unique"

	apiv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
)

// trimObject is the transform of every informer of this package: it drops,
// before an object is cached, what no role reads, and interns the names and
// values of labels and annotations. It is idempotent, as client-go requires,
// and leaves anything but an object (a tombstone) as is.
func trimObject(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
		a.SetLabels(interned(a.GetLabels()))
		a.SetAnnotations(interned(a.GetAnnotations()))
	}
	if p, ok := obj.(*apiv1.Pod); ok {
		trimPod(p)
	}
	return obj, nil
}

// trimPod keeps what podLabels, buildPod and the endpoint roles read.
func trimPod(p *apiv1.Pod) {
	p.Spec = apiv1.PodSpec{
		NodeName:       p.Spec.NodeName,
		Containers:     trimContainers(p.Spec.Containers),
		InitContainers: trimContainers(p.Spec.InitContainers),
	}
	var ready []apiv1.PodCondition
	for _, c := range p.Status.Conditions {
		if c.Type == apiv1.PodReady {
			ready = append(ready, apiv1.PodCondition{Type: c.Type, Status: c.Status})
		}
	}
	p.Status = apiv1.PodStatus{
		Phase:                 p.Status.Phase,
		PodIP:                 p.Status.PodIP,
		HostIP:                p.Status.HostIP,
		Conditions:            ready,
		ContainerStatuses:     trimStatuses(p.Status.ContainerStatuses),
		InitContainerStatuses: trimStatuses(p.Status.InitContainerStatuses),
	}
}

func trimContainers(cs []apiv1.Container) []apiv1.Container {
	if cs == nil {
		return nil
	}
	out := make([]apiv1.Container, len(cs))
	for i, c := range cs {
		out[i] = apiv1.Container{Name: c.Name, Image: c.Image, Ports: c.Ports}
	}
	return out
}

// interned returns m with its keys and values replaced by their canonical
// copies (package unique): the pods of one workload carry the same label and
// annotation strings, and each decoded object has its own copies of them,
// which every target built from the pod then shares. It builds a new map of
// m's size: assigning into m in place turns a full small map (8 entries)
// into a table twice its size.
func interned(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[unique.Make(k).Value()] = unique.Make(v).Value()
	}
	return out
}

func trimStatuses(ss []apiv1.ContainerStatus) []apiv1.ContainerStatus {
	if ss == nil {
		return nil
	}
	out := make([]apiv1.ContainerStatus, len(ss))
	for i, s := range ss {
		out[i] = apiv1.ContainerStatus{Name: s.Name, ContainerID: s.ContainerID}
	}
	return out
}
