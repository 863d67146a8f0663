package instrumentation

import (
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Apache HTTPD is configured by file, not environment: an init container
// cloned from the application copies its configuration directory into a
// shared volume, a second one (the module image) copies the module into
// another volume, writes the module's configuration and includes it from
// httpd.conf; the application mounts both volumes, the configuration one
// over its own configuration directory.
const (
	apacheDefaultConfDir = "/usr/local/apache2/conf"
	apacheAgentDir       = "/opt/opentelemetry-webserver/agent"
	apacheStagedConfDir  = "/opt/opentelemetry-webserver/source-conf"
	apacheAttachInit     = "otel-agent-attach-apache"
	apacheCloneInit      = "otel-agent-source-container-clone"
	apacheConfVolume     = "otel-apache-conf-dir"
	apacheAgentVolume    = "otel-apache-agent"
	apacheInstancePlace  = "<<SID-PLACEHOLDER>>"
)

//go:embed scripts/apache_httpd_attach.sh
var apacheAttachScript string

// webServerContainers are the named containers a web server's module goes
// into; a name not in the pod and an init container are reasons instead.
func (j *injector) webServerContainers(names []string) (picked []*corev1.Container, reasons []string) {
	all, missing := j.containers(names)
	for _, m := range missing {
		reasons = append(reasons, fmt.Sprintf("container %s: not in the pod", m))
	}
	for _, c := range all {
		if j.isInit(c.Name) {
			reasons = append(reasons, fmt.Sprintf("container %s: is an init container", c.Name))
			continue
		}
		picked = append(picked, c)
	}
	return picked, reasons
}

func (j *injector) apacheHttpd(names []string) (bool, string) {
	spec := j.inst.Spec.ApacheHttpd
	confDir := strings.TrimSuffix(spec.ConfigPath, "/")
	if confDir == "" {
		confDir = apacheDefaultConfDir
	}
	picked, reasons := j.webServerContainers(names)
	done := 0
	for _, c := range picked {
		// The containers slice does not move while one is instrumented
		// (only init containers and volumes are added), so c stays valid.
		res := j.resourceMap(c)
		c.Env = appendIfNotSet(c.Env, spec.Env...)
		sc := j.initSecurityContext(c)
		resources := defaultResources(spec.Resources, ApacheHttpd)
		if !j.hasInit(apacheCloneInit) {
			limit := defaultVolumeSize.DeepCopy()
			if spec.VolumeSizeLimit != nil {
				limit = spec.VolumeSizeLimit.DeepCopy()
			}
			j.addVolume(corev1.Volume{Name: apacheConfVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}})
			j.stageConfig(c, confDir, apacheConfVolume, apacheAgentVolume, resources, sc,
				[]string{"cp", "-r", confDir + "/.", apacheStagedConfDir}, nil)
		}
		if !j.hasInit(apacheAttachInit) {
			j.addVolume(volume(apacheAgentVolume, spec.VolumeClaimTemplate, spec.VolumeSizeLimit))
			env := appendIfNotSet(nil, spec.Env...)
			env = appendIfNotSet(env, j.inst.Spec.Env...)
			env = appendIfNotSet(env, fieldEnv(envPodIP, "status.podIP"), fieldEnv(envNodeIP, "status.hostIP"))
			env = append(env,
				corev1.EnvVar{Name: "OTEL_APACHE_AGENT_CONF", Value: j.apacheConfig(c, res)},
				fieldEnv("APACHE_SERVICE_INSTANCE_ID", "metadata.name"))
			j.pod.Spec.InitContainers = append(j.pod.Spec.InitContainers, corev1.Container{
				Name:            apacheAttachInit,
				Image:           image(spec.Image, ApacheHttpd, j.s),
				Command:         []string{"/bin/sh", "-c"},
				Args:            []string{apacheAttachScript, "--", confDir},
				Env:             env,
				Resources:       resources,
				SecurityContext: sc,
				VolumeMounts: []corev1.VolumeMount{
					{Name: apacheAgentVolume, MountPath: apacheAgentDir},
					{Name: apacheConfVolume, MountPath: apacheStagedConfDir},
				},
				ImagePullPolicy: j.inst.Spec.ImagePullPolicy,
			})
		}
		j.commonEnv(c)
		j.commonSDKConfig(c, c)
		done++
	}
	return done > 0, joinReasons(reasons)
}

// apacheConfig is the module's configuration: the SDK libraries, the module
// for the Apache version, and the attributes (spec attrs override ours).
func (j *injector) apacheConfig(c *corev1.Container, res map[string]string) string {
	spec := j.inst.Spec.ApacheHttpd
	suffix := ""
	if spec.Version == "2.2" {
		suffix = "22"
	}
	attrs := j.moduleAttrs("ApacheModule", "apache-httpd", c, res)
	for _, a := range spec.Attrs {
		attrs[a.Name] = a.Value
	}
	var b strings.Builder
	b.WriteString("\n# OpenTelemetry webserver SDK\n")
	for _, lib := range []string{"common", "resources", "trace", "otlp_recordable", "exporter_ostream_span", "exporter_otlp_grpc", "webserver_sdk"} {
		fmt.Fprintf(&b, "LoadFile %s/sdk_lib/lib/libopentelemetry_%s.so\n", apacheAgentDir, lib)
	}
	fmt.Fprintf(&b, "LoadModule otel_apache_module %s/WebServerModule/Apache/libmod_apache_otel%s.so\n", apacheAgentDir, suffix)
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		fmt.Fprintf(&b, "%s %s\n", k, attrs[k])
	}
	return b.String()
}

// stageConfig adds the init container that copies the application's
// configuration directory confDir (from the application's own image, with its
// environment and mounts) into the volume confVolume, and mounts the staged
// copy and the agent volume into c in place of the application's own mount of
// confDir. Apache HTTPD and nginx both work this way; only the copy command
// differs.
func (j *injector) stageConfig(c *corev1.Container, confDir, confVolume, agentVolume string, resources corev1.ResourceRequirements, sc *corev1.SecurityContext, command, args []string) {
	clone := corev1.Container{
		Name:            apacheCloneInit,
		Image:           c.Image,
		Command:         command,
		Args:            args,
		Env:             appendIfNotSet(nil, c.Env...),
		VolumeMounts:    append(slices.Clone(c.VolumeMounts), corev1.VolumeMount{Name: confVolume, MountPath: apacheStagedConfDir}),
		Resources:       *resources.DeepCopy(),
		SecurityContext: sc.DeepCopy(),
		ImagePullPolicy: c.ImagePullPolicy,
	}
	for _, e := range c.EnvFrom {
		clone.EnvFrom = append(clone.EnvFrom, *e.DeepCopy())
	}
	j.pod.Spec.InitContainers = append(j.pod.Spec.InitContainers, clone)
	if i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return strings.Contains(m.MountPath, confDir) }); i >= 0 {
		c.VolumeMounts = slices.Delete(c.VolumeMounts, i, i+1)
	}
	c.VolumeMounts = append(c.VolumeMounts,
		corev1.VolumeMount{Name: agentVolume, MountPath: apacheAgentDir},
		corev1.VolumeMount{Name: confVolume, MountPath: confDir})
}

// moduleAttrs are the web server module's settings both Apache HTTPD's and
// Nginx's OpenTelemetry modules take, under their own prefix
// (ApacheModule..., NginxModule...), as upstream: the exporter endpoint
// (default the local collector), the service name, its namespace (default
// fallbackNamespace) and the instance id placeholder the attach script fills.
func (j *injector) moduleAttrs(prefix, fallbackNamespace string, c *corev1.Container, res map[string]string) map[string]string {
	endpoint := j.inst.Spec.Exporter.Endpoint
	if endpoint == "" {
		endpoint = "http://localhost:4317/"
	}
	namespace := j.in.Namespace.Name
	if namespace == "" {
		namespace = fallbackNamespace
	}
	return map[string]string{
		prefix + "Enabled":              "ON",
		prefix + "OtelSpanExporter":     "otlp",
		prefix + "OtelExporterEndpoint": endpoint,
		prefix + "ServiceName":          j.serviceName(j.inst.Spec.Defaults.UseLabelsForResourceAttributes, res, c),
		prefix + "ServiceNamespace":     namespace,
		prefix + "ServiceInstanceId":    apacheInstancePlace,
		prefix + "ResolveBackends":      "ON",
		prefix + "TraceAsError":         "ON",
	}
}
