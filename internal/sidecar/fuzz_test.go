package sidecar

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// randomCase builds a pod, its namespace and a resolution from a seed:
// random containers (some named otc-container, some a copy of an injected
// sidecar), random annotations on pod and namespace, the injected label
// or not, a collector or an unresolved reason.
func randomCase(t testing.TB, seed1, seed2 uint64) (*corev1.Pod, Input, Settings) {
	r := rand.New(rand.NewPCG(seed1, seed2))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	c := collectorFromYAML(t, upstreamCollector)
	if r.IntN(2) == 0 {
		// Volumes, configmaps, init containers and mounts of a pod volume.
		c = collectorFromYAML(t, podFieldsCollector)
	}
	c.Namespace = "app"
	ours, err := Container(c, "app", nil, nil, settings(false))
	require.NoError(t, err)
	container := func() corev1.Container {
		switch r.IntN(6) {
		case 0:
			return corev1.Container{Name: ContainerName, Image: "mine:1"}
		case 1:
			return *ours.DeepCopy()
		default:
			return corev1.Container{Name: pick("app", "web", "worker", "init", "fetch-certs"), Image: "app:1"}
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}, Labels: map[string]string{}}}
	// A valid pod: names unique, as the API server demands.
	for range r.IntN(3) {
		if c := container(); !slices.Contains(names(pod), c.Name) {
			pod.Spec.Containers = append(pod.Spec.Containers, c)
		}
	}
	for range r.IntN(2) {
		if c := container(); !slices.Contains(names(pod), c.Name) {
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
		}
	}
	for range r.IntN(3) {
		v := corev1.Volume{Name: pick("app-logs", "data", "configmap-example-config", "certs")}
		if !slices.ContainsFunc(pod.Spec.Volumes, func(o corev1.Volume) bool { return o.Name == v.Name }) {
			pod.Spec.Volumes = append(pod.Spec.Volumes, v)
		}
	}
	values := []string{"true", "false", "FALSE", "sidecar-for-my-app", "app/sidecar-for-my-app", "other/x", "app/", "/x", ""}
	if v := pick(values...); v != "" {
		pod.Annotations[Annotation] = v
	}
	if r.IntN(3) == 0 {
		pod.Labels[LabelInjected] = "app.sidecar-for-my-app"
	}
	ns := metav1.ObjectMeta{Name: "app", Annotations: map[string]string{}}
	if v := pick(values...); v != "" {
		ns.Annotations[Annotation] = v
	}
	in := Input{Namespace: ns, Owners: deploymentOwners()}
	switch r.IntN(3) {
	case 0:
		in.Collector = c
	case 1:
		in.Unresolved = pick2(r, ErrAmbiguous, ErrNotFound, ErrNoCollector, errors.New("boom"))
	}
	return pod, in, settings(r.IntN(2) == 0)
}

func pick2(r *rand.Rand, errs ...error) error { return errs[r.IntN(len(errs))] }

func names(pod *corev1.Pod) []string {
	var out []string
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		out = append(out, c.Name)
	}
	return out
}

// FuzzMutate: no panic on any pod; mutating twice equals mutating once; an
// injection adds exactly one otc-container to a pod that had none; only a
// sidecar this package injected is ever removed; the collector (the cache's
// object) is never changed.
func FuzzMutate(f *testing.F) {
	for i := range uint64(64) {
		f.Add(i, i*7919)
	}
	f.Fuzz(func(t *testing.T, a, b uint64) {
		pod, in, s := randomCase(t, a, b)
		before := in.Collector.DeepCopy()
		once := pod.DeepCopy()
		out := Mutate(once, in, s)
		require.Equal(t, before, in.Collector)
		switch out.Result {
		case Injected:
			require.False(t, Present(pod))
			require.Equal(t, 1, countCollectors(once))
			require.Len(t, names(once), len(names(pod))+1+len(in.Collector.Spec.InitContainers))
			require.Len(t, once.Spec.Volumes, len(pod.Spec.Volumes)+len(Volumes(in.Collector)))
			valid(t, once)
		case Removed:
			kept := 0
			for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
				if !injected(pod, c) {
					kept++
					require.Contains(t, names(once), c.Name, "a container that is not an injected sidecar is kept")
				}
			}
			require.Len(t, names(once), kept, "every injected sidecar is removed")
			require.NotContains(t, once.Labels, LabelInjected)
		default:
			require.Equal(t, pod, once, "result %s changes nothing", out.Result)
		}
		twice := once.DeepCopy()
		Mutate(twice, in, s)
		require.Equal(t, once, twice, "%+v", out)
	})
}

// valid checks what the API server would refuse: a container or volume
// name used twice, a volume mount naming no volume.
func valid(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	seen := map[string]bool{}
	for _, n := range names(pod) {
		require.False(t, seen[n], "container %s twice", n)
		seen[n] = true
	}
	vols := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		require.False(t, vols[v.Name], "volume %s twice", v.Name)
		vols[v.Name] = true
	}
	for _, m := range collectorContainer(pod).VolumeMounts {
		require.True(t, vols[m.Name], "mount of missing volume %s", m.Name)
	}
}

func collectorContainer(pod *corev1.Pod) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == ContainerName {
				return &list[i]
			}
		}
	}
	return nil
}

func countCollectors(pod *corev1.Pod) int {
	n := 0
	for _, name := range names(pod) {
		if name == ContainerName {
			n++
		}
	}
	return n
}
