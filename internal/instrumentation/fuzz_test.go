package instrumentation

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardwise/shardwise/apis/v1alpha1"
)

// randomCase builds a pod, namespace, Instrumentations and settings from a
// seed: random containers (some init), random annotations drawn from the
// ones the mutator reads (with valid and invalid values), random existing
// environment variables, some set with valueFrom.
func randomCase(seed1, seed2 uint64) (*corev1.Pod, Input, Settings) {
	r := rand.New(rand.NewPCG(seed1, seed2))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	names := []string{"app", "web", "worker", "a-b", "x"}
	envNames := []string{envJavaToolOpts, envNodeOptions, envPythonPath, "DOTNET_STARTUP_HOOKS", "OTEL_DOTNET_AUTO_HOME", envServiceName,
		envResourceAttrs, envPodName, envNodeName, envTracesSampler, envPropagators, envExporterEndpoint, "CORECLR_PROFILER", "OTHER"}
	container := func(name string) corev1.Container {
		c := corev1.Container{Name: name, Image: pick("app:1", "reg:5000/a/b:2@sha256:0123456789012345678901234567890123456789012345678901234567890123", "BAD IMAGE", "")}
		for range r.IntN(4) {
			e := corev1.EnvVar{Name: pick(envNames...), Value: pick("", "v", "a=b,service.version=3", ",")}
			if r.IntN(5) == 0 {
				e = corev1.EnvVar{Name: e.Name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}
			}
			c.Env = append(c.Env, e)
		}
		return c
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pick("", "p"), Annotations: map[string]string{}, Labels: map[string]string{}}}
	for i := range r.IntN(4) {
		pod.Spec.Containers = append(pod.Spec.Containers, container(names[(i+r.IntN(2))%len(names)]))
	}
	for range r.IntN(3) {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, container(pick(append(names, initContainerName+"-java", "init")...)))
	}
	if r.IntN(4) == 0 {
		pod.Spec.ShareProcessNamespace = new(r.IntN(2) == 0)
	}
	if r.IntN(3) == 0 {
		pod.Spec.NodeName = "node-1"
	}
	values := []string{"true", "false", "TRUE", "inst", "ns/inst", ""}
	containerValues := []string{"app", "web,worker", "app,app", "x,nope", "bad name!", ""}
	annotate := func(m map[string]string) {
		for _, l := range Languages {
			if r.IntN(3) == 0 {
				m[InjectAnnotation(l)] = pick(values...)
			}
			if r.IntN(4) == 0 {
				m[ContainersAnnotation(l)] = pick(containerValues...)
			}
		}
		if r.IntN(3) == 0 {
			m[AnnotationContainerNames] = pick(containerValues...)
		}
		if r.IntN(4) == 0 {
			m[AnnotationPythonPlatform] = pick("glibc", "musl", "windows")
		}
		if r.IntN(4) == 0 {
			m[AnnotationDotNetRuntime] = pick("linux-x64", "linux-musl-x64", "arm")
		}
		if r.IntN(3) == 0 {
			m[AnnotationGoTargetExe] = "/app"
		}
		if r.IntN(4) == 0 {
			m[AnnotationResourcePrefix+pick("service.name", "service.version", "team", "service.instance.id")] = "v"
		}
	}
	annotate(pod.Annotations)
	ns := metav1.ObjectMeta{Name: "ns", Annotations: map[string]string{}}
	if r.IntN(2) == 0 {
		annotate(ns.Annotations)
	}
	inst := &v1alpha1.Instrumentation{Spec: v1alpha1.InstrumentationSpec{
		Exporter:    v1alpha1.Exporter{Endpoint: pick("", "http://c:4318")},
		Propagators: []v1alpha1.Propagator{"tracecontext"},
		Sampler:     v1alpha1.Sampler{Type: v1alpha1.SamplerType(pick("", "traceidratio")), Argument: pick("", "0.5")},
		Env:         []corev1.EnvVar{{Name: pick(envNames...), Value: "spec"}},
		Resource:    v1alpha1.Resource{AddK8sUIDAttributes: r.IntN(2) == 0, Attributes: map[string]string{"k8s.pod.name": "x", "env": "prod"}},
		Defaults:    v1alpha1.Defaults{UseLabelsForResourceAttributes: r.IntN(2) == 0},
	}}
	if r.IntN(3) == 0 {
		inst.Spec.Exporter.TLS = &v1alpha1.TLS{SecretName: "s", ConfigMapName: pick("", "cm"), CA: "ca", Cert: "c", Key: "/k"}
	}
	if r.IntN(3) == 0 {
		inst.Spec.Java.Extensions = []v1alpha1.Extensions{{Image: "e", Dir: "/d"}}
	}
	if r.IntN(3) == 0 {
		inst.Spec.Go.Env = []corev1.EnvVar{{Name: envGoTargetExe, Value: "/bin/x"}}
	}
	if r.IntN(4) == 0 {
		inst.Spec.DotNet.Env = []corev1.EnvVar{{Name: "OTEL_DOTNET_AUTO_HOME", Value: "/x"}}
	}
	in := Input{Namespace: ns, Instrumentations: map[Language]*v1alpha1.Instrumentation{}, Owners: []Owner{{Kind: pick("ReplicaSet", "Job", "Unknown"), Name: "o"}}}
	for _, l := range Languages {
		if r.IntN(5) != 0 {
			in.Instrumentations[l] = inst
		}
	}
	s := DefaultSettings()
	s.MultiInstrumentation = r.IntN(3) != 0
	s.Enabled[Go] = r.IntN(2) == 0
	return pod, in, s
}

// FuzzMutate: no panic on any pod, and mutating twice equals mutating once.
func FuzzMutate(f *testing.F) {
	for i := range uint64(64) {
		f.Add(i, i*7919)
	}
	f.Fuzz(func(t *testing.T, a, b uint64) {
		pod, in, s := randomCase(a, b)
		once := pod.DeepCopy()
		var before []*v1alpha1.Instrumentation
		for _, l := range Languages {
			before = append(before, in.Instrumentations[l].DeepCopy())
		}
		outcomes := Mutate(once, in, s)
		for i, l := range Languages {
			require.Equal(t, before[i], in.Instrumentations[l], "the Instrumentation (the cache's object) is never changed")
		}
		injected := false
		for _, o := range outcomes {
			require.NotEmpty(t, o.Result, "every requested language gets a result")
			injected = injected || o.Result == Injected
		}
		if !injected {
			require.Equal(t, pod, once, "a pod with nothing injected is unchanged: %v", outcomes)
		}
		twice := once.DeepCopy()
		Mutate(twice, in, s)
		require.Equal(t, once, twice, fmt.Sprint(outcomes))
	})
}
