package instrumentation

import (
	_ "embed"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Nginx is configured by file like Apache HTTPD: the clone init container
// stages the configuration directory (and the nginx version), the attach
// init container adds the module to the main configuration file and its
// settings to conf.d, and the application mounts the staged directory over
// its own. Unlike the other languages, upstream gives both volumes plain
// emptyDirs, ignoring volumeClaimTemplate and volumeLimitSize; so do we.
const (
	nginxDefaultConfFile = "/etc/nginx/nginx.conf"
	nginxAttachInit      = "otel-agent-attach-nginx"
	nginxConfVolume      = "otel-nginx-conf-dir"
	nginxAgentVolume     = "otel-nginx-agent"
	envLDLibraryPath     = "LD_LIBRARY_PATH"
)

var (
	//go:embed scripts/nginx_clone.sh
	nginxCloneScript string
	//go:embed scripts/nginx_attach.sh
	nginxAttachScript string
)

func (j *injector) nginx(names []string) (bool, string) {
	spec := j.inst.Spec.Nginx
	confFile := spec.ConfigFile
	if confFile == "" {
		confFile = nginxDefaultConfFile
	}
	confDir := path.Dir(confFile)
	picked, reasons := j.webServerContainers(names)
	done := 0
	for _, c := range picked {
		res := j.resourceMap(c)
		c.Env = appendIfNotSet(c.Env, spec.Env...)
		sc := j.initSecurityContext(c)
		resources := defaultResources(spec.Resources, Nginx)
		if !j.hasInit(apacheCloneInit) {
			j.addVolume(corev1.Volume{Name: nginxConfVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			j.stageConfig(c, confDir, nginxConfVolume, nginxAgentVolume, resources, sc,
				[]string{"/bin/sh", "-c"}, []string{nginxCloneScript, "--", confDir})
		}
		if !j.hasInit(nginxAttachInit) {
			j.addVolume(corev1.Volume{Name: nginxAgentVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			env := appendIfNotSet(nil, spec.Env...)
			env = appendIfNotSet(env, j.inst.Spec.Env...)
			env = appendIfNotSet(env, fieldEnv(envPodIP, "status.podIP"), fieldEnv(envNodeIP, "status.hostIP"))
			env = append(env,
				corev1.EnvVar{Name: "OTEL_NGINX_AGENT_CONF", Value: j.nginxConfig(c, res)},
				fieldEnv("OTEL_NGINX_SERVICE_INSTANCE_ID", "metadata.name"))
			j.pod.Spec.InitContainers = append(j.pod.Spec.InitContainers, corev1.Container{
				Name:            nginxAttachInit,
				Image:           image(spec.Image, Nginx, j.s),
				Command:         []string{"/bin/sh", "-c"},
				Args:            []string{nginxAttachScript, "--", path.Base(confFile)},
				Env:             env,
				Resources:       resources,
				SecurityContext: sc,
				VolumeMounts: []corev1.VolumeMount{
					{Name: nginxAgentVolume, MountPath: apacheAgentDir},
					{Name: nginxConfVolume, MountPath: apacheStagedConfDir},
				},
				ImagePullPolicy: j.inst.Spec.ImagePullPolicy,
			})
			lib := apacheAgentDir + "/sdk_lib/lib"
			if i := envIndex(c.Env, envLDLibraryPath); i >= 0 {
				c.Env[i].Value += ":" + lib
			} else {
				c.Env = append(c.Env, corev1.EnvVar{Name: envLDLibraryPath, Value: lib})
			}
		}
		j.commonEnv(c)
		j.commonSDKConfig(c, c)
		done++
	}
	return done > 0, joinReasons(reasons)
}

// nginxConfig is the module's settings, one directive per attribute (spec
// attrs override ours).
func (j *injector) nginxConfig(c *corev1.Container, res map[string]string) string {
	attrs := j.moduleAttrs("NginxModule", "nginx", c, res)
	for _, a := range j.inst.Spec.Nginx.Attrs {
		attrs[a.Name] = a.Value
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		fmt.Fprintf(&b, "%s %s;\n", k, attrs[k])
	}
	return b.String()
}
