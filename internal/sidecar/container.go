package sidecar

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests/container"
)

// Environment variable names, as upstream's pkg/constants.
const (
	envPodName       = "OTEL_RESOURCE_ATTRIBUTES_POD_NAME"
	envPodUID        = "OTEL_RESOURCE_ATTRIBUTES_POD_UID"
	envNodeName      = "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME"
	envResourceAttrs = "OTEL_RESOURCE_ATTRIBUTES"
)

// configArg makes the collector read its configuration from EnvConfig.
const configArg = container.ConfigEnvArg

// Container builds the sidecar container of collector c for a pod of
// namespace podNamespace with the given owner chain and pod security context
// (podSecurity, nil when the pod has none): the collector container every
// mode shares (package container) with the sidecar's additions, as upstream
// (pkg/sidecar/pod.go).
func Container(c *v1beta1.OpenTelemetryCollector, podNamespace string, podSecurity *corev1.PodSecurityContext, owners []Owner, s Settings) (corev1.Container, error) {
	cfg, err := renderConfig(c.Spec.Config)
	if err != nil {
		return corev1.Container{}, err
	}
	ctr, err := container.Build(c, container.Options{
		Image:              s.Image,
		Config:             cfg,
		PodSecurityContext: podSecurity,
		NativeSidecar:      s.NativeSidecar,
	})
	if err != nil {
		return corev1.Container{}, err
	}
	if envIndex(ctr.Env, envResourceAttrs) < 0 {
		ctr.Env = append(ctr.Env, resourceEnv(podNamespace, owners)...)
	}
	return ctr, nil
}

// Volumes are the pod volumes the sidecar of collector c brings: its
// volumes, then one per ConfigMap of its configmaps, as upstream's
// pkg/sidecar add.
func Volumes(c *v1beta1.OpenTelemetryCollector) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range c.Spec.Volumes {
		out = append(out, *v.DeepCopy())
	}
	return append(out, container.ConfigMapVolumes(&c.Spec)...)
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
		container.FieldEnv(envPodName, "metadata.name"),
		container.FieldEnv(envPodUID, "metadata.uid"),
		container.FieldEnv(envNodeName, "spec.nodeName"),
		{Name: envResourceAttrs, Value: strings.Join(parts, ",")},
	}
}

func envIndex(env []corev1.EnvVar, name string) int { return container.EnvIndex(env, name) }
