package instrumentation

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"

	"github.com/shardwise/shardwise/apis/v1alpha1"
)

// Environment variable names.
const (
	envPodIP              = "OTEL_POD_IP"
	envNodeIP             = "OTEL_NODE_IP"
	envPodName            = "OTEL_RESOURCE_ATTRIBUTES_POD_NAME"
	envPodUID             = "OTEL_RESOURCE_ATTRIBUTES_POD_UID"
	envNodeName           = "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME"
	envServiceName        = "OTEL_SERVICE_NAME"
	envResourceAttrs      = "OTEL_RESOURCE_ATTRIBUTES"
	envPropagators        = "OTEL_PROPAGATORS"
	envTracesSampler      = "OTEL_TRACES_SAMPLER"
	envTracesSamplerArg   = "OTEL_TRACES_SAMPLER_ARG"
	envExporterEndpoint   = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envExporterCA         = "OTEL_EXPORTER_OTLP_CERTIFICATE"
	envExporterClientCert = "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"
	envExporterClientKey  = "OTEL_EXPORTER_OTLP_CLIENT_KEY"
	envMetricsExporter    = "OTEL_METRICS_EXPORTER"
)

// injector injects one Instrumentation into one pod.
type injector struct {
	pod  *corev1.Pod
	in   Input
	inst *v1alpha1.Instrumentation
	s    Settings
}

// containers returns the named containers, init containers first in pod
// order then regular ones in annotation order, and the names not found.
func (j *injector) containers(names []string) (picked []*corev1.Container, missing []string) {
	var inits, regular []*corev1.Container
	for _, n := range names {
		if i := slices.IndexFunc(j.pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == n }); i >= 0 {
			regular = append(regular, &j.pod.Spec.Containers[i])
		} else if i := slices.IndexFunc(j.pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == n }); i >= 0 {
			inits = append(inits, &j.pod.Spec.InitContainers[i])
		} else {
			missing = append(missing, n)
		}
	}
	initIndex := func(c *corev1.Container) int {
		return slices.IndexFunc(j.pod.Spec.InitContainers, func(x corev1.Container) bool { return x.Name == c.Name })
	}
	slices.SortStableFunc(inits, func(a, b *corev1.Container) int { return initIndex(a) - initIndex(b) })
	return append(inits, regular...), missing
}

func (j *injector) isInit(name string) bool {
	return slices.ContainsFunc(j.pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == name })
}

// insertInit adds an init container before the target if the target is an
// init container itself, else at the end.
func (j *injector) insertInit(c corev1.Container, target string) {
	if i := slices.IndexFunc(j.pod.Spec.InitContainers, func(x corev1.Container) bool { return x.Name == target }); i >= 0 {
		j.pod.Spec.InitContainers = slices.Insert(j.pod.Spec.InitContainers, i, c)
		return
	}
	j.pod.Spec.InitContainers = append(j.pod.Spec.InitContainers, c)
}

func (j *injector) hasInit(name string) bool { return j.isInit(name) }

// initSecurityContext is spec.initContainerSecurityContext or the first
// instrumented container's.
func (j *injector) initSecurityContext(first *corev1.Container) *corev1.SecurityContext {
	if j.inst.Spec.InitContainerSecurityContext != nil {
		return j.inst.Spec.InitContainerSecurityContext.DeepCopy()
	}
	return first.SecurityContext.DeepCopy()
}

// perContainer runs a language's container hook on every picked container,
// then the common environment, and collects the reasons of skipped ones.
// It reports whether at least one container was instrumented.
func (j *injector) perContainer(names []string, hook func(c *corev1.Container) string, after func(c *corev1.Container)) (done []*corev1.Container, reasons []string) {
	picked, missing := j.containers(names)
	for _, m := range missing {
		reasons = append(reasons, fmt.Sprintf("container %s: not in the pod", m))
	}
	for _, c := range picked {
		if why := hook(c); why != "" {
			reasons = append(reasons, fmt.Sprintf("container %s: %s", c.Name, why))
			continue
		}
		j.commonEnv(c)
		if after != nil {
			after(c)
		}
		j.commonSDKConfig(c, c)
		done = append(done, c)
	}
	return done, reasons
}

// commonEnv prepends the pod and node IPs and appends spec.env, each only
// if the container does not set it.
func (j *injector) commonEnv(c *corev1.Container) {
	for _, e := range []corev1.EnvVar{fieldEnv(envPodIP, "status.podIP"), fieldEnv(envNodeIP, "status.hostIP")} {
		if envIndex(c.Env, e.Name) < 0 {
			c.Env = append([]corev1.EnvVar{e}, c.Env...)
		}
	}
	c.Env = appendIfNotSet(c.Env, j.inst.Spec.Env...)
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

// commonSDKConfig appends the OTEL_* variables in upstream's order, with
// OTEL_RESOURCE_ATTRIBUTES last. c receives the variables; app is the
// application container the resource attributes describe (they differ only
// for the Go sidecar).
func (j *injector) commonSDKConfig(c, app *corev1.Container) {
	spec := &j.inst.Spec
	useLabels := spec.Defaults.UseLabelsForResourceAttributes
	res := j.resourceMap(app)
	if envIndex(c.Env, envServiceName) < 0 {
		c.Env = append(c.Env, corev1.EnvVar{Name: envServiceName, Value: j.serviceName(useLabels, res, app)})
	}
	j.exporter(c)
	if envIndex(c.Env, envPodName) < 0 {
		c.Env = append(c.Env, fieldEnv(envPodName, "metadata.name"))
	}
	res["k8s.pod.name"] = "$(" + envPodName + ")"
	if spec.Resource.AddK8sUIDAttributes && res["k8s.pod.uid"] == "" {
		if envIndex(c.Env, envPodUID) < 0 {
			c.Env = append(c.Env, fieldEnv(envPodUID, "metadata.uid"))
		}
		res["k8s.pod.uid"] = "$(" + envPodUID + ")"
	}
	if i := envIndex(c.Env, envResourceAttrs); i < 0 || !strings.Contains(c.Env[i].Value, "service.version") {
		if v := j.serviceVersion(useLabels, app); v != "" {
			res["service.version"] = v
		}
	}
	if res["k8s.node.name"] == "" {
		if envIndex(c.Env, envNodeName) < 0 {
			c.Env = append(c.Env, fieldEnv(envNodeName, "spec.nodeName"))
		}
		res["k8s.node.name"] = "$(" + envNodeName + ")"
	}
	attrs := resourceString(res)
	if i := envIndex(c.Env, envResourceAttrs); i < 0 {
		c.Env = append(c.Env, corev1.EnvVar{Name: envResourceAttrs, Value: attrs})
	} else if c.Env[i].ValueFrom == nil && attrs != "" {
		if !strings.HasSuffix(c.Env[i].Value, ",") && c.Env[i].Value != "" {
			attrs = "," + attrs
		}
		c.Env[i].Value += attrs
	}
	if envIndex(c.Env, envPropagators) < 0 && len(spec.Propagators) > 0 {
		ps := make([]string, len(spec.Propagators))
		for i, p := range spec.Propagators {
			ps[i] = string(p)
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: envPropagators, Value: strings.Join(ps, ",")})
	}
	if spec.Sampler.Type != "" && envIndex(c.Env, envTracesSampler) < 0 && envIndex(c.Env, envTracesSamplerArg) < 0 {
		c.Env = append(c.Env, corev1.EnvVar{Name: envTracesSampler, Value: string(spec.Sampler.Type)})
		if spec.Sampler.Argument != "" {
			c.Env = append(c.Env, corev1.EnvVar{Name: envTracesSamplerArg, Value: spec.Sampler.Argument})
		}
	}
	if i := envIndex(c.Env, envResourceAttrs); i >= 0 {
		e := c.Env[i]
		c.Env = append(slices.Delete(c.Env, i, i+1), e)
	}
}

// resourceMap builds the resource attributes for app, lowest precedence
// first: spec attributes, Kubernetes attributes, resource.opentelemetry.io/*
// pod annotations, service.namespace. Keys the container's own
// OTEL_RESOURCE_ATTRIBUTES already has are left out.
func (j *injector) resourceMap(app *corev1.Container) map[string]string {
	existing := map[string]bool{}
	if i := envIndex(app.Env, envResourceAttrs); i >= 0 {
		for kv := range strings.SplitSeq(app.Env[i].Value, ",") {
			parts := strings.Split(strings.TrimSpace(kv), "=")
			if len(parts) == 2 {
				existing[parts[0]] = true
			}
		}
	}
	res := map[string]string{}
	for k, v := range j.inst.Spec.Resource.Attributes {
		if !existing[k] {
			res[k] = v
		}
	}
	ns := j.in.Namespace.Name
	k8s := map[string]string{
		"k8s.namespace.name":  ns,
		"k8s.container.name":  app.Name,
		"k8s.pod.name":        j.pod.Name,
		"k8s.pod.uid":         string(j.pod.UID),
		"k8s.node.name":       j.pod.Spec.NodeName,
		"service.instance.id": j.serviceInstanceID(ns, app.Name),
	}
	uid := j.inst.Spec.Resource.AddK8sUIDAttributes
	for _, o := range j.in.Owners {
		kind := strings.ToLower(o.Kind)
		switch kind {
		case "replicaset", "deployment", "statefulset", "daemonset", "job", "cronjob":
			k8s["k8s."+kind+".name"] = o.Name
			if uid {
				k8s["k8s."+kind+".uid"] = string(o.UID)
			}
		}
	}
	for k, v := range k8s {
		if !existing[k] && v != "" {
			res[k] = v
		}
	}
	for k, v := range j.pod.Annotations {
		if key, ok := strings.CutPrefix(k, AnnotationResourcePrefix); ok && !existing[key] && key != "service.name" {
			res[key] = v
		}
	}
	if n := j.labelOrAnnotation(j.inst.Spec.Defaults.UseLabelsForResourceAttributes, "service.namespace"); n != "" {
		ns = n
	}
	if ns != "" && !existing["service.namespace"] {
		res["service.namespace"] = ns
	}
	return res
}

func (j *injector) serviceInstanceID(ns, container string) string {
	if v := j.pod.Annotations[AnnotationResourcePrefix+"service.instance.id"]; v != "" {
		return v
	}
	if ns == "" || container == "" {
		return ""
	}
	return ns + ".$(" + envPodName + ")." + container
}

// labelOrAnnotation is the resource.opentelemetry.io/<attr> annotation, else
// (with useLabels) the first well-known label that is set.
func (j *injector) labelOrAnnotation(useLabels bool, attr string, labels ...string) string {
	if v := j.pod.Annotations[AnnotationResourcePrefix+attr]; v != "" {
		return v
	}
	if useLabels {
		for _, l := range labels {
			if v := j.pod.Labels[l]; v != "" {
				return v
			}
		}
	}
	return ""
}

func (j *injector) serviceName(useLabels bool, res map[string]string, app *corev1.Container) string {
	if v := j.labelOrAnnotation(useLabels, "service.name", "app.kubernetes.io/instance", "app.kubernetes.io/name"); v != "" {
		return v
	}
	for _, k := range []string{"k8s.deployment.name", "k8s.replicaset.name", "k8s.statefulset.name", "k8s.daemonset.name", "k8s.cronjob.name", "k8s.job.name"} {
		if v := res[k]; v != "" {
			return v
		}
	}
	if j.pod.Name != "" {
		return j.pod.Name
	}
	return app.Name
}

func (j *injector) serviceVersion(useLabels bool, app *corev1.Container) string {
	if v := j.labelOrAnnotation(useLabels, "service.version", "app.kubernetes.io/version"); v != "" {
		return v
	}
	return imageVersion(app.Image)
}

// imageVersion is the image's tag, digest, or tag@digest; "" if the image
// reference does not parse or has neither.
func imageVersion(image string) string {
	ref, err := reference.Parse(image)
	if err != nil {
		return ""
	}
	var tag, digest string
	if t, ok := ref.(reference.Tagged); ok {
		tag = t.Tag()
	}
	if d, ok := ref.(reference.Digested); ok {
		digest = d.Digest().String()
	}
	switch {
	case tag != "" && digest != "":
		return tag + "@" + digest
	case digest != "":
		return digest
	default:
		return tag
	}
}

func resourceString(res map[string]string) string {
	keys := slices.Sorted(maps.Keys(res))
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(res[k])
	}
	return b.String()
}

// exporter sets the endpoint and TLS variables and mounts the certificates.
func (j *injector) exporter(c *corev1.Container) {
	exp := j.inst.Spec.Exporter
	if exp.Endpoint != "" {
		c.Env = appendIfNotSet(c.Env, corev1.EnvVar{Name: envExporterEndpoint, Value: exp.Endpoint})
	}
	tls := exp.TLS
	if tls == nil {
		return
	}
	secretVolume := truncate("otel-auto-secret-"+tls.SecretName, 63)
	secretPath := "/otel-auto-instrumentation-secret-" + tls.SecretName
	cmVolume := truncate("otel-auto-configmap-"+tls.ConfigMapName, 63)
	cmPath := "/otel-auto-instrumentation-configmap-" + tls.ConfigMapName
	file := func(dir, f string) string {
		if filepath.IsAbs(f) {
			return f
		}
		return dir + "/" + f
	}
	if tls.CA != "" {
		dir := secretPath
		if tls.ConfigMapName != "" {
			dir = cmPath
		}
		c.Env = appendIfNotSet(c.Env, corev1.EnvVar{Name: envExporterCA, Value: file(dir, tls.CA)})
	}
	if tls.Cert != "" {
		c.Env = appendIfNotSet(c.Env, corev1.EnvVar{Name: envExporterClientCert, Value: file(secretPath, tls.Cert)})
	}
	if tls.Key != "" {
		c.Env = appendIfNotSet(c.Env, corev1.EnvVar{Name: envExporterClientKey, Value: file(secretPath, tls.Key)})
	}
	if tls.SecretName != "" {
		j.addVolume(corev1.Volume{Name: secretVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: tls.SecretName}}})
		addMount(c, corev1.VolumeMount{Name: secretVolume, MountPath: secretPath, ReadOnly: true})
	}
	if tls.ConfigMapName != "" {
		j.addVolume(corev1.Volume{Name: cmVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: tls.ConfigMapName}}}})
		addMount(c, corev1.VolumeMount{Name: cmVolume, MountPath: cmPath, ReadOnly: true})
	}
}

func (j *injector) addVolume(v corev1.Volume) {
	if !slices.ContainsFunc(j.pod.Spec.Volumes, func(x corev1.Volume) bool { return x.Name == v.Name }) {
		j.pod.Spec.Volumes = append(j.pod.Spec.Volumes, v)
	}
}

func addMount(c *corev1.Container, m corev1.VolumeMount) {
	if !slices.ContainsFunc(c.VolumeMounts, func(x corev1.VolumeMount) bool { return x.Name == m.Name }) {
		c.VolumeMounts = append(c.VolumeMounts, m)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.TrimRight(s[:n], "-.")
}

func envIndex(env []corev1.EnvVar, name string) int {
	for i := range env {
		if env[i].Name == name {
			return i
		}
	}
	return -1
}

func appendIfNotSet(env []corev1.EnvVar, add ...corev1.EnvVar) []corev1.EnvVar {
	for _, e := range add {
		if envIndex(env, e.Name) < 0 {
			env = append(env, *e.DeepCopy())
		}
	}
	return env
}

// setOrReplace sets a variable the injector computed from the container's
// own value (the list variables), keeping its position.
func setOrReplace(env []corev1.EnvVar, e corev1.EnvVar) []corev1.EnvVar {
	if i := envIndex(env, e.Name); i >= 0 {
		env[i] = e
		return env
	}
	return append(env, e)
}

// valueFrom says whether the container sets one of names from a source the
// webhook cannot extend.
func valueFrom(env []corev1.EnvVar, names ...string) string {
	for _, n := range names {
		if i := envIndex(env, n); i >= 0 && env[i].ValueFrom != nil {
			return fmt.Sprintf("the container sets %s with valueFrom, which cannot be extended", n)
		}
	}
	return ""
}

func joinReasons(r []string) string { return strings.Join(r, "; ") }
