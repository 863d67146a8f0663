package container

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/shardwise/shardwise/apis/v1beta1"
)

// Names of the collector container and of what it reads its configuration
// from, as upstream.
const (
	// Name is the collector container's name in every mode.
	Name = "otc-container"
	// ConfigDir is where the workload modes mount the configuration volume.
	ConfigDir = "/conf"
	// EnvConfig carries the sidecar's configuration, read with
	// --config=env:OTEL_CONFIG.
	EnvConfig = "OTEL_CONFIG"
	// ConfigEnvArg makes the collector read its configuration from EnvConfig.
	ConfigEnvArg = "--config=env:" + EnvConfig
)

// Options are what the modes differ in.
type Options struct {
	// Image is the collector image when the resource names none.
	Image string
	// ConfigVolume and ConfigFile are the workload modes' configuration: the
	// volume mounted at ConfigDir and the file in it, which the container
	// reads first. With ConfigVolume empty the configuration is Config
	// instead, passed in EnvConfig and read last (the sidecar).
	ConfigVolume, ConfigFile string
	// Config is the rendered configuration of a sidecar.
	Config string
	// PodSecurityContext is the security context of the pod the container
	// runs in; see SecurityContext.
	PodSecurityContext *corev1.PodSecurityContext
	// NativeSidecar makes the container a native sidecar (an init container
	// with restartPolicy Always).
	NativeSidecar bool
}

// Build is the collector container of c, as upstream's collector.Container:
// image, command, args, env, envFrom, ports, resources, volume mounts,
// lifecycle, probes and security context from the resource, the same in
// every mode but for the configuration's source.
func Build(c *v1beta1.OpenTelemetryCollector, o Options) (corev1.Container, error) {
	spec := &c.Spec
	image := spec.Image
	if image == "" {
		image = o.Image
	}
	envFrom := make([]corev1.EnvFromSource, len(spec.EnvFrom))
	for i := range spec.EnvFrom {
		envFrom[i] = *spec.EnvFrom[i].DeepCopy()
	}
	ctr := corev1.Container{
		Name:            Name,
		Image:           image,
		ImagePullPolicy: spec.ImagePullPolicy,
		Command:         slices.Clone(spec.Command),
		Args:            args(spec.Args, o),
		Env:             env(spec, o),
		EnvFrom:         nilIfEmpty(envFrom),
		Ports:           Ports(spec.Config, spec.Ports),
		Resources:       *spec.Resources.DeepCopy(),
		VolumeMounts:    volumeMounts(spec, o),
		SecurityContext: SecurityContext(spec.SecurityContext, o.PodSecurityContext),
		Lifecycle:       spec.Lifecycle.DeepCopy(),
	}
	if err := probes(&ctr, spec, o.NativeSidecar); err != nil {
		return corev1.Container{}, err
	}
	if o.NativeSidecar {
		ctr.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	}
	return ctr, nil
}

// args are spec.args rendered --k=v, sorted, after the configuration file
// (a config argument of the user's is dropped: the operator's rendered
// configuration is the configuration) or, for a sidecar, before
// ConfigEnvArg (the collector merges several configurations), as upstream.
func args(user map[string]string, o Options) []string {
	var out []string
	if o.ConfigVolume != "" {
		out = append(out, "--config="+path.Join(ConfigDir, o.ConfigFile))
	}
	for _, k := range slices.Sorted(maps.Keys(user)) {
		if k == "config" && o.ConfigVolume != "" {
			continue
		}
		out = append(out, fmt.Sprintf("--%s=%s", k, user[k]))
	}
	if o.ConfigVolume == "" {
		out = append(out, ConfigEnvArg)
	}
	return out
}

// FieldEnv is a variable from the pod's downward API.
func FieldEnv(name, fieldPath string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath}}}
}

// LimitEnv is a variable from a resource limit of the container named
// container.
func LimitEnv(name, container, resource string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: container, Resource: resource}}}
}

// env is spec.env, then upstream's variables of every collector container
// that the user does not define: POD_NAME (the collector id the prometheus
// receiver sends the allocator), GOMEMLIMIT and GOMAXPROCS from the
// container's limits (feature gate operator.golang.flags, stable), and
// K8S_NODE_NAME for a kubeletstats receiver in a pipeline; then a sidecar's
// EnvConfig, which no user variable may shadow.
func env(spec *v1beta1.OpenTelemetryCollectorSpec, o Options) []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, len(spec.Env)+5)
	for _, e := range spec.Env {
		out = append(out, *e.DeepCopy())
	}
	inferred := []corev1.EnvVar{
		FieldEnv("POD_NAME", "metadata.name"),
		LimitEnv("GOMEMLIMIT", Name, "limits.memory"),
		LimitEnv("GOMAXPROCS", Name, "limits.cpu"),
	}
	if usesReceiver(spec.Config, "kubeletstats") {
		inferred = append(inferred, FieldEnv("K8S_NODE_NAME", "spec.nodeName"))
	}
	out = AppendUnset(out, inferred...)
	if o.ConfigVolume == "" {
		out = slices.DeleteFunc(out, func(e corev1.EnvVar) bool { return e.Name == EnvConfig })
		out = append(out, corev1.EnvVar{Name: EnvConfig, Value: o.Config})
	}
	return out
}

// AppendUnset appends to env each of extra whose name env does not define
// yet: the operator's variables never shadow the user's.
func AppendUnset(env []corev1.EnvVar, extra ...corev1.EnvVar) []corev1.EnvVar {
	for _, e := range extra {
		if EnvIndex(env, e.Name) < 0 {
			env = append(env, e)
		}
	}
	return env
}

// EnvIndex is the index of the variable called name in env, or -1.
func EnvIndex(env []corev1.EnvVar, name string) int {
	return slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == name })
}

// ConfigMapVolume is the name of the volume of a ConfigMap listed in
// spec.configmaps, as upstream's naming.ConfigMapExtra: configmap-<name>
// made a DNS label.
func ConfigMapVolume(name string) string {
	const maxLen = 63
	var b strings.Builder
	for _, r := range strings.ToLower("configmap-" + name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteRune('-')
		}
	}
	v := b.String()
	if len(v) > maxLen {
		v = v[:maxLen]
	}
	return strings.TrimRight(v, "-")
}

// ConfigMapVolumes are the pod volumes of spec.configmaps, one per
// ConfigMap, named ConfigMapVolume.
func ConfigMapVolumes(spec *v1beta1.OpenTelemetryCollectorSpec) []corev1.Volume {
	var out []corev1.Volume
	for _, cm := range spec.Configmaps {
		out = append(out, corev1.Volume{
			Name: ConfigMapVolume(cm.Name),
			VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name},
			}},
		})
	}
	return out
}

// volumeMounts are the configuration volume at ConfigDir (workload modes),
// spec.volumeMounts, then each of spec.configmaps at
// /var/conf/<mountpath>/<volume>, as upstream's collector.Container.
func volumeMounts(spec *v1beta1.OpenTelemetryCollectorSpec, o Options) []corev1.VolumeMount {
	var out []corev1.VolumeMount
	if o.ConfigVolume != "" {
		out = append(out, corev1.VolumeMount{Name: o.ConfigVolume, MountPath: ConfigDir})
	}
	for _, m := range spec.VolumeMounts {
		out = append(out, *m.DeepCopy())
	}
	for _, cm := range spec.Configmaps {
		name := ConfigMapVolume(cm.Name)
		out = append(out, corev1.VolumeMount{Name: name, MountPath: path.Join("/var/conf", cm.MountPath, name)})
	}
	return out
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}
