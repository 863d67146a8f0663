package sidecar

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1beta1"
)

// Environment variable names, as upstream's pkg/constants.
const (
	envPodName       = "OTEL_RESOURCE_ATTRIBUTES_POD_NAME"
	envPodUID        = "OTEL_RESOURCE_ATTRIBUTES_POD_UID"
	envNodeName      = "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME"
	envResourceAttrs = "OTEL_RESOURCE_ATTRIBUTES"
)

// configArg makes the collector read its configuration from EnvConfig.
const configArg = "--config=env:" + EnvConfig

// Container builds the sidecar container of collector c for a pod of
// namespace podNamespace with the given owner chain, as upstream's
// collector.Container with the sidecar's additions (pkg/sidecar/pod.go).
func Container(c *v1beta1.OpenTelemetryCollector, podNamespace string, owners []Owner, s Settings) (corev1.Container, error) {
	spec := &c.Spec
	cfg, err := renderConfig(spec.Config)
	if err != nil {
		return corev1.Container{}, err
	}
	image := spec.Image
	if image == "" {
		image = s.Image
	}
	// spec.args sorted, as upstream; a config argument stays (the collector
	// merges several) and the sidecar's own comes last.
	var args []string
	for _, k := range slices.Sorted(maps.Keys(spec.Args)) {
		args = append(args, fmt.Sprintf("--%s=%s", k, spec.Args[k]))
	}
	args = append(args, configArg)

	// Deep copies: the collector is usually the cache's own object.
	env := make([]corev1.EnvVar, 0, len(spec.Env)+12)
	for _, e := range spec.Env {
		env = append(env, *e.DeepCopy())
	}
	for _, e := range inferredEnv(spec.Config) {
		if envIndex(spec.Env, e.Name) < 0 {
			env = append(env, e)
		}
	}
	// The configuration is the collector's: a user variable of that name
	// would shadow it.
	env = slices.DeleteFunc(env, func(e corev1.EnvVar) bool { return e.Name == EnvConfig })
	env = append(env, corev1.EnvVar{Name: EnvConfig, Value: cfg})
	if envIndex(env, envResourceAttrs) < 0 {
		env = append(env, resourceEnv(podNamespace, owners)...)
	}

	envFrom := make([]corev1.EnvFromSource, len(spec.EnvFrom))
	for i := range spec.EnvFrom {
		envFrom[i] = *spec.EnvFrom[i].DeepCopy()
	}
	probe := healthProbe(spec.Config)
	container := corev1.Container{
		Name:            ContainerName,
		Image:           image,
		ImagePullPolicy: spec.ImagePullPolicy,
		Command:         slices.Clone(spec.Command),
		Args:            args,
		Env:             env,
		EnvFrom:         nilIfEmpty(envFrom),
		Ports:           containerPorts(spec.Config, spec.Ports),
		Resources:       *spec.Resources.DeepCopy(),
		VolumeMounts:    volumeMounts(spec),
		SecurityContext: securityContext(spec.SecurityContext),
		LivenessProbe:   tunedProbe(probe, spec.LivenessProbe),
		ReadinessProbe:  tunedProbe(probe, spec.ReadinessProbe),
		StartupProbe:    tunedProbe(probe, spec.StartupProbe),
		Lifecycle:       spec.Lifecycle.DeepCopy(),
	}
	if s.NativeSidecar {
		container.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	}
	return container, nil
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// configMapVolume is the name of the volume of a ConfigMap listed in
// spec.configmaps, as upstream's naming.ConfigMapExtra:
// configmap-<name> made a DNS label.
func configMapVolume(name string) string {
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

// volumeMounts are the collector's volumeMounts, then each of its
// configmaps at /var/conf/<mountpath>/configmap-<name>, as upstream's
// collector.Container.
func volumeMounts(spec *v1beta1.OpenTelemetryCollectorSpec) []corev1.VolumeMount {
	var out []corev1.VolumeMount
	for _, m := range spec.VolumeMounts {
		out = append(out, *m.DeepCopy())
	}
	for _, cm := range spec.Configmaps {
		name := configMapVolume(cm.Name)
		out = append(out, corev1.VolumeMount{Name: name, MountPath: path.Join("/var/conf", cm.MountPath, name)})
	}
	return out
}

// Volumes are the pod volumes the sidecar of collector c brings: its
// volumes, then one per ConfigMap of its configmaps, as upstream's
// pkg/sidecar add.
func Volumes(c *v1beta1.OpenTelemetryCollector) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range c.Spec.Volumes {
		out = append(out, *v.DeepCopy())
	}
	for _, cm := range c.Spec.Configmaps {
		out = append(out, corev1.Volume{
			Name: configMapVolume(cm.Name),
			VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name},
			}},
		})
	}
	return out
}

// tunedProbe is the health probe with the user's timings, as upstream's
// defaultProbeSettings: only the fields the user sets are changed.
func tunedProbe(health *corev1.Probe, user *v1beta1.Probe) *corev1.Probe {
	p := health.DeepCopy()
	if p == nil || user == nil {
		return p
	}
	if user.InitialDelaySeconds != nil {
		p.InitialDelaySeconds = *user.InitialDelaySeconds
	}
	if user.PeriodSeconds != nil {
		p.PeriodSeconds = *user.PeriodSeconds
	}
	if user.FailureThreshold != nil {
		p.FailureThreshold = *user.FailureThreshold
	}
	if user.SuccessThreshold != nil {
		p.SuccessThreshold = *user.SuccessThreshold
	}
	if user.TimeoutSeconds != nil {
		p.TimeoutSeconds = *user.TimeoutSeconds
	}
	p.TerminationGracePeriodSeconds = user.TerminationGracePeriodSeconds
	return p
}

// renderConfig is the collector configuration as YAML with sorted keys.
func renderConfig(cfg v1beta1.Config) (string, error) {
	j, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("render collector config: %w", err)
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return "", fmt.Errorf("render collector config: %w", err)
	}
	return string(y), nil
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func limitEnv(name, resource string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: ContainerName, Resource: resource}}}
}

// inferredEnv are upstream's variables of every collector container:
// POD_NAME, GOMEMLIMIT and GOMAXPROCS from the container's limits (feature
// gate operator.golang.flags, stable), and K8S_NODE_NAME for a kubeletstats
// receiver in a pipeline.
func inferredEnv(cfg v1beta1.Config) []corev1.EnvVar {
	env := []corev1.EnvVar{
		fieldEnv("POD_NAME", "metadata.name"),
		limitEnv("GOMEMLIMIT", "limits.memory"),
		limitEnv("GOMAXPROCS", "limits.cpu"),
	}
	for _, id := range enabled(cfg, "receivers") {
		if componentType(id) == "kubeletstats" {
			env = append(env, fieldEnv("K8S_NODE_NAME", "spec.nodeName"))
			break
		}
	}
	return env
}

// resourceEnv is the downward API variables and OTEL_RESOURCE_ATTRIBUTES with
// the pod's k8s.* attributes, keys sorted, as upstream's attributes.go.
func resourceEnv(podNamespace string, owners []Owner) []corev1.EnvVar {
	attrs := map[string]string{
		"k8s.pod.name":       "$(" + envPodName + ")",
		"k8s.pod.uid":        "$(" + envPodUID + ")",
		"k8s.node.name":      "$(" + envNodeName + ")",
		"k8s.namespace.name": podNamespace,
	}
	for _, o := range owners {
		kind := strings.ToLower(o.Kind)
		switch kind {
		case "replicaset", "deployment", "statefulset", "daemonset", "job", "cronjob":
		default:
			continue
		}
		// The nearest owner of a kind wins.
		if _, ok := attrs["k8s."+kind+".name"]; ok {
			continue
		}
		attrs["k8s."+kind+".name"] = o.Name
		attrs["k8s."+kind+".uid"] = string(o.UID)
	}
	parts := make([]string, 0, len(attrs))
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		parts = append(parts, k+"="+attrs[k])
	}
	return []corev1.EnvVar{
		fieldEnv(envPodName, "metadata.name"),
		fieldEnv(envPodUID, "metadata.uid"),
		fieldEnv(envNodeName, "spec.nodeName"),
		{Name: envResourceAttrs, Value: strings.Join(parts, ",")},
	}
}

// securityContext is the user's, or the restricted one of the Pod Security
// Standards, as the operator's other collector containers.
func securityContext(user *corev1.SecurityContext) *corev1.SecurityContext {
	if user != nil {
		return user.DeepCopy()
	}
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func envIndex(env []corev1.EnvVar, name string) int {
	return slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == name })
}
