package instrumentation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Java: the agent jar copied by an init container into a shared volume that
// each application container mounts at its own path, and -javaagent
// appended to JAVA_TOOL_OPTIONS.
const (
	javaMountPath    = "/otel-auto-instrumentation-java"
	envJavaToolOpts  = "JAVA_TOOL_OPTIONS"
	javaVolume       = volumeName + "-java"
	javaInit         = initContainerName + "-java"
	nodejsMountPath  = "/otel-auto-instrumentation-nodejs"
	envNodeOptions   = "NODE_OPTIONS"
	nodejsVolume     = volumeName + "-nodejs"
	nodejsInit       = initContainerName + "-nodejs"
	pythonMountPath  = "/otel-auto-instrumentation-python"
	envPythonPath    = "PYTHONPATH"
	pythonVolume     = volumeName + "-python"
	pythonInit       = initContainerName + "-python"
	pythonPathPrefix = pythonMountPath + "/opentelemetry/instrumentation/auto_instrumentation"
	dotnetMountPath  = "/otel-auto-instrumentation-dotnet"
	dotnetVolume     = volumeName + "-dotnet"
	dotnetInit       = initContainerName + "-dotnet"
)

func (j *injector) java(names []string) (bool, string) {
	spec := j.inst.Spec.Java
	vol := volume(javaVolume, spec.VolumeClaimTemplate, spec.VolumeSizeLimit)
	done, reasons := j.perContainer(names, func(c *corev1.Container) string {
		if why := valueFrom(c.Env, envJavaToolOpts); why != "" {
			return why
		}
		c.Env = appendIfNotSet(c.Env, spec.Env...)
		addMount(c, corev1.VolumeMount{Name: vol.Name, MountPath: javaMountPath + "-" + c.Name})
		return ""
	}, func(c *corev1.Container) {
		arg := fmt.Sprintf(" -javaagent:%s-%s/javaagent.jar", javaMountPath, c.Name)
		if len(spec.Extensions) > 0 {
			arg += fmt.Sprintf(" -Dotel.javaagent.extensions=%s-%s/extensions", javaMountPath, c.Name)
		}
		value := arg
		if i := envIndex(c.Env, envJavaToolOpts); i >= 0 {
			value = c.Env[i].Value + arg
		}
		c.Env = setOrReplace(c.Env, corev1.EnvVar{Name: envJavaToolOpts, Value: value})
	})
	if len(done) == 0 {
		return false, joinReasons(reasons)
	}
	if !j.hasInit(javaInit) {
		first := done[0].Name
		j.addVolume(vol)
		sc := j.initSecurityContext(done[0])
		res := defaultResources(spec.Resources, Java)
		mounts := []corev1.VolumeMount{{Name: vol.Name, MountPath: javaMountPath}}
		j.insertInit(corev1.Container{
			Name:            javaInit,
			Image:           image(spec.Image, Java, j.s),
			Command:         []string{"cp", "/javaagent.jar", javaMountPath + "/javaagent.jar"},
			Resources:       res,
			SecurityContext: sc,
			VolumeMounts:    mounts,
			ImagePullPolicy: j.inst.Spec.ImagePullPolicy,
		}, first)
		for i, ext := range spec.Extensions {
			j.insertInit(corev1.Container{
				Name:            fmt.Sprintf("%s-extension-%d", initContainerName, i),
				Image:           ext.Image,
				Command:         []string{"cp", "-r", ext.Dir + "/.", javaMountPath + "/extensions"},
				Resources:       *res.DeepCopy(),
				SecurityContext: sc.DeepCopy(),
				VolumeMounts:    []corev1.VolumeMount{{Name: vol.Name, MountPath: javaMountPath}},
			}, first)
		}
	}
	return true, joinReasons(reasons)
}

func (j *injector) nodejs(names []string) (bool, string) {
	spec := j.inst.Spec.NodeJS
	vol := volume(nodejsVolume, spec.VolumeClaimTemplate, spec.VolumeSizeLimit)
	done, reasons := j.perContainer(names, func(c *corev1.Container) string {
		if why := valueFrom(c.Env, envNodeOptions); why != "" {
			return why
		}
		c.Env = appendIfNotSet(c.Env, spec.Env...)
		addMount(c, corev1.VolumeMount{Name: vol.Name, MountPath: nodejsMountPath})
		return ""
	}, func(c *corev1.Container) {
		const arg = " --require " + nodejsMountPath + "/autoinstrumentation.js"
		value := arg
		if i := envIndex(c.Env, envNodeOptions); i >= 0 {
			value = c.Env[i].Value + arg
		}
		c.Env = setOrReplace(c.Env, corev1.EnvVar{Name: envNodeOptions, Value: value})
		c.Env = appendIfNotSet(c.Env, corev1.EnvVar{Name: envMetricsExporter, Value: "otlp"})
	})
	if len(done) == 0 {
		return false, joinReasons(reasons)
	}
	j.initOnce(nodejsInit, vol, done[0], spec.Image, NodeJS, spec.Resources, "/autoinstrumentation/.", nodejsMountPath)
	return true, joinReasons(reasons)
}

func (j *injector) python(names []string, platform string) (bool, string) {
	spec := j.inst.Spec.Python
	var src string
	switch platform {
	case "", "glibc":
		src = "/autoinstrumentation/."
	case "musl":
		src = "/autoinstrumentation-musl/."
	default:
		return false, fmt.Sprintf("annotation %s=%q is not supported (glibc or musl)", AnnotationPythonPlatform, platform)
	}
	vol := volume(pythonVolume, spec.VolumeClaimTemplate, spec.VolumeSizeLimit)
	done, reasons := j.perContainer(names, func(c *corev1.Container) string {
		if why := valueFrom(c.Env, envPythonPath); why != "" {
			return why
		}
		c.Env = appendIfNotSet(c.Env, spec.Env...)
		if i := envIndex(c.Env, envPythonPath); i >= 0 {
			c.Env[i].Value = pythonPathPrefix + ":" + c.Env[i].Value + ":" + pythonMountPath
		} else {
			c.Env = append(c.Env, corev1.EnvVar{Name: envPythonPath, Value: pythonPathPrefix + ":" + pythonMountPath})
		}
		addMount(c, corev1.VolumeMount{Name: vol.Name, MountPath: pythonMountPath})
		return ""
	}, func(c *corev1.Container) {
		c.Env = appendIfNotSet(c.Env,
			corev1.EnvVar{Name: "OTEL_EXPORTER_OTLP_PROTOCOL", Value: "http/protobuf"},
			corev1.EnvVar{Name: "OTEL_TRACES_EXPORTER", Value: "otlp"},
			corev1.EnvVar{Name: envMetricsExporter, Value: "otlp"},
			corev1.EnvVar{Name: "OTEL_LOGS_EXPORTER", Value: "otlp"},
		)
	})
	if len(done) == 0 {
		return false, joinReasons(reasons)
	}
	j.initOnce(pythonInit, vol, done[0], spec.Image, Python, spec.Resources, src, pythonMountPath)
	return true, joinReasons(reasons)
}

func (j *injector) dotnet(names []string, runtime string) (bool, string) {
	spec := j.inst.Spec.DotNet
	profiler := dotnetMountPath + "/linux/OpenTelemetry.AutoInstrumentation.Native.so"
	switch runtime {
	case "", "linux-x64":
	case "linux-musl-x64":
		profiler = dotnetMountPath + "/linux-musl/OpenTelemetry.AutoInstrumentation.Native.so"
	default:
		return false, fmt.Sprintf("annotation %s=%q is not supported (linux-x64 or linux-musl-x64)", AnnotationDotNetRuntime, runtime)
	}
	if envIndex(spec.Env, "OTEL_DOTNET_AUTO_HOME") >= 0 {
		return false, "OTEL_DOTNET_AUTO_HOME is already set in the Instrumentation's dotnet.env"
	}
	vol := volume(dotnetVolume, spec.VolumeClaimTemplate, spec.VolumeSizeLimit)
	done, reasons := j.perContainer(names, func(c *corev1.Container) string {
		if why := valueFrom(c.Env, "DOTNET_STARTUP_HOOKS", "DOTNET_ADDITIONAL_DEPS", "DOTNET_SHARED_STORE"); why != "" {
			return why
		}
		if envIndex(c.Env, "OTEL_DOTNET_AUTO_HOME") >= 0 {
			return "the container already sets OTEL_DOTNET_AUTO_HOME"
		}
		c.Env = appendIfNotSet(c.Env, spec.Env...)
		addMount(c, corev1.VolumeMount{Name: vol.Name, MountPath: dotnetMountPath})
		return ""
	}, func(c *corev1.Container) {
		for _, v := range []struct {
			name, value string
			concat      bool
		}{
			{"CORECLR_ENABLE_PROFILING", "1", false},
			{"CORECLR_PROFILER", "{918728DD-259F-4A6A-AC2B-B85E1B658318}", false},
			{"CORECLR_PROFILER_PATH", profiler, false},
			{"DOTNET_STARTUP_HOOKS", dotnetMountPath + "/net/OpenTelemetry.AutoInstrumentation.StartupHook.dll", true},
			{"DOTNET_ADDITIONAL_DEPS", dotnetMountPath + "/AdditionalDeps", true},
			{"OTEL_DOTNET_AUTO_HOME", dotnetMountPath, false},
			{"DOTNET_SHARED_STORE", dotnetMountPath + "/store", true},
		} {
			i := envIndex(c.Env, v.name)
			switch {
			case i < 0:
				c.Env = append(c.Env, corev1.EnvVar{Name: v.name, Value: v.value})
			case v.concat && c.Env[i].ValueFrom == nil:
				c.Env[i].Value += ":" + v.value
			}
		}
	})
	if len(done) == 0 {
		return false, joinReasons(reasons)
	}
	j.initOnce(dotnetInit, vol, done[0], spec.Image, DotNet, spec.Resources, "/autoinstrumentation/.", dotnetMountPath)
	return true, joinReasons(reasons)
}

// initOnce adds a language's volume and its copying init container, unless
// the pod already has that init container.
func (j *injector) initOnce(name string, vol corev1.Volume, first *corev1.Container, specImage string, l Language, res corev1.ResourceRequirements, src, mountPath string) {
	if j.hasInit(name) {
		return
	}
	j.addVolume(vol)
	j.insertInit(corev1.Container{
		Name:            name,
		Image:           image(specImage, l, j.s),
		Command:         []string{"cp", "-r", src, mountPath},
		Resources:       defaultResources(res, l),
		SecurityContext: j.initSecurityContext(first),
		VolumeMounts:    []corev1.VolumeMount{{Name: vol.Name, MountPath: mountPath}},
		ImagePullPolicy: j.inst.Spec.ImagePullPolicy,
	}, first.Name)
}

// Go: a privileged eBPF sidecar sharing the pod's process namespace, with
// OTEL_GO_AUTO_TARGET_EXE naming the application binary.
const (
	envGoTargetExe   = "OTEL_GO_AUTO_TARGET_EXE"
	kernelDebugName  = "kernel-debug"
	kernelDebugPath  = "/sys/kernel/debug"
	goMultiContainer = "go instrumentation cannot be injected into a pod with more than one container named in "
)

func (j *injector) golang(names []string) (bool, string) {
	spec := j.inst.Spec.Go
	pod := j.pod
	if pod.Spec.ShareProcessNamespace != nil && !*pod.Spec.ShareProcessNamespace {
		return false, "the pod explicitly disables shareProcessNamespace, which the Go agent needs"
	}
	key := AnnotationContainerNames
	if j.s.MultiInstrumentation {
		key = ContainersAnnotation(Go)
	}
	if v, ok := pod.Annotations[key]; ok && len(strings.Split(v, ",")) > 1 {
		return false, goMultiContainer + key
	}
	target := names[0]
	if j.isInit(target) {
		return false, fmt.Sprintf("container %s is an init container", target)
	}
	app, missing := j.containers([]string{target})
	if len(missing) > 0 {
		return false, fmt.Sprintf("container %s: not in the pod", target)
	}
	sidecar := corev1.Container{
		Name:            goSidecarName,
		Image:           image(spec.Image, Go, j.s),
		Resources:       defaultResources(spec.Resources, Go),
		SecurityContext: spec.SecurityContext.DeepCopy(),
		VolumeMounts:    []corev1.VolumeMount{{Name: kernelDebugName, MountPath: kernelDebugPath}},
		ImagePullPolicy: j.inst.Spec.ImagePullPolicy,
	}
	if sidecar.SecurityContext == nil {
		privileged, root := true, int64(0)
		sidecar.SecurityContext = &corev1.SecurityContext{RunAsUser: &root, Privileged: &privileged}
	}
	if exe, ok := pod.Annotations[AnnotationGoTargetExe]; ok {
		sidecar.Env = append(sidecar.Env, corev1.EnvVar{Name: envGoTargetExe, Value: exe})
	}
	sidecar.Env = appendIfNotSet(sidecar.Env, spec.Env...)
	if envIndex(sidecar.Env, envGoTargetExe) < 0 {
		return false, fmt.Sprintf("no target executable: set annotation %s or %s in the Instrumentation's go.env", AnnotationGoTargetExe, envGoTargetExe)
	}
	j.commonEnv(&sidecar)
	// The sidecar's resource attributes describe the application container;
	// compute them before the sidecar is appended, as app points into the
	// containers slice.
	appCopy := app[0].DeepCopy()
	j.commonSDKConfig(&sidecar, appCopy)
	share := true
	pod.Spec.ShareProcessNamespace = &share
	pod.Spec.Containers = append(pod.Spec.Containers, sidecar)
	j.addVolume(corev1.Volume{Name: kernelDebugName, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: kernelDebugPath}}})
	return true, ""
}

// sdk injects only the common OTEL_* environment.
func (j *injector) sdk(names []string) (bool, string) {
	done, reasons := j.perContainer(names, func(*corev1.Container) string { return "" }, nil)
	return len(done) > 0, joinReasons(reasons)
}
