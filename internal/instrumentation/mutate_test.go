package instrumentation

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
)

func appPod(annotations map[string]string, containers ...corev1.Container) *corev1.Pod {
	if len(containers) == 0 {
		containers = []corev1.Container{{Name: "myapp", Image: "registry.example/shop/app:1.4.2"}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "my-app-7d9f8b6c5d-", Namespace: "shop",
			Annotations: annotations,
			Labels:      map[string]string{"app": "my-app"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "my-app-7d9f8b6c5d", UID: "rs-uid",
			}},
		},
		Spec: corev1.PodSpec{Containers: containers},
	}
}

func deploymentOwners() []Owner {
	return []Owner{{Kind: "ReplicaSet", Name: "my-app-7d9f8b6c5d", UID: "rs-uid"}, {Kind: "Deployment", Name: "my-app", UID: "deploy-uid"}}
}

// upstreamJava is upstream's e2e Instrumentation for Java
// (tests/e2e-instrumentation/instrumentation-java/00-install-instrumentation.yaml).
func upstreamJava() *v1alpha1.Instrumentation {
	return &v1alpha1.Instrumentation{
		ObjectMeta: metav1.ObjectMeta{Name: "java", Namespace: "shop"},
		Spec: v1alpha1.InstrumentationSpec{
			Env: []corev1.EnvVar{
				{Name: "OTEL_TRACES_SAMPLER", Value: "always_on"},
				{Name: "OTEL_EXPORTER_OTLP_PROTOCOL", Value: "http/protobuf"},
				{Name: "OTEL_LOGS_EXPORTER", Value: "none"},
			},
			Exporter:    v1alpha1.Exporter{Endpoint: "http://deployment-collector:4318"},
			Propagators: []v1alpha1.Propagator{"jaeger", "b3"},
			Java: v1alpha1.Java{Env: []corev1.EnvVar{
				{Name: "OTEL_JAVAAGENT_DEBUG", Value: "true"},
				{Name: "OTEL_INSTRUMENTATION_JDBC_ENABLED", Value: "false"},
			}},
		},
	}
}

func basic() *v1alpha1.Instrumentation {
	return &v1alpha1.Instrumentation{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "shop"},
		Spec: v1alpha1.InstrumentationSpec{
			Exporter:    v1alpha1.Exporter{Endpoint: "http://otel-collector.observability:4318"},
			Propagators: []v1alpha1.Propagator{"tracecontext", "baggage"},
			Sampler:     v1alpha1.Sampler{Type: v1alpha1.ParentBasedTraceIDRatio, Argument: "0.25"},
			Resource:    v1alpha1.Resource{Attributes: map[string]string{"deployment.environment": "prod"}},
		},
	}
}

func all(inst *v1alpha1.Instrumentation, langs ...Language) map[Language]*v1alpha1.Instrumentation {
	m := map[Language]*v1alpha1.Instrumentation{}
	for _, l := range langs {
		m[l] = inst
	}
	return m
}

func enabledAll() Settings {
	s := DefaultSettings()
	s.Enabled[Go] = true
	return s
}

type goldenCase struct {
	name     string
	pod      *corev1.Pod
	ns       metav1.ObjectMeta
	insts    map[Language]*v1alpha1.Instrumentation
	owners   []Owner
	settings Settings
}

func goldenCases() []goldenCase {
	shop := metav1.ObjectMeta{Name: "shop"}
	sizeLimit := resource.MustParse("500Mi")
	javaExt := upstreamJava()
	javaExt.Spec.Java.Extensions = []v1alpha1.Extensions{{Image: "registry.example/ext:1", Dir: "/extensions"}}
	javaExt.Spec.Java.VolumeClaimTemplate = &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	javaExt.Spec.InitContainerSecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr(true)}
	python := basic()
	python.Spec.Python.VolumeSizeLimit = &sizeLimit
	python.Spec.Python.Env = []corev1.EnvVar{{Name: "OTEL_LOGS_EXPORTER", Value: "console"}}
	tls := basic()
	tls.Spec.Exporter.TLS = &v1alpha1.TLS{SecretName: "otel-client", ConfigMapName: "otel-ca", CA: "ca.crt", Cert: "tls.crt", Key: "/abs/tls.key"}
	tls.Spec.Resource.AddK8sUIDAttributes = true
	goInst := basic()
	goInst.Spec.Go.Env = []corev1.EnvVar{{Name: "OTEL_GO_AUTO_INCLUDE_DB_STATEMENT", Value: "true"}}
	goNoExe := basic()
	apache := basic()
	apache.Spec.ApacheHttpd = v1alpha1.ApacheHttpd{Version: "2.2", ConfigPath: "/usr/local/apache2/conf/", Attrs: []corev1.EnvVar{{Name: "ApacheModuleTraceAsError", Value: "OFF"}}, Env: []corev1.EnvVar{{Name: "OTEL_APACHE_DEBUG", Value: "1"}}}
	nginx := basic()
	nginx.Spec.Nginx = v1alpha1.Nginx{ConfigFile: "/etc/nginx/nginx.conf", Attrs: []corev1.EnvVar{{Name: "NginxModuleOtelMaxQueueSize", Value: "4096"}}}
	withLabels := basic()
	withLabels.Spec.Defaults.UseLabelsForResourceAttributes = true

	return []goldenCase{
		{name: "java-upstream-e2e", pod: appPod(map[string]string{InjectAnnotation(Java): "true"}, corev1.Container{
			Name: "myapp", Image: "ghcr.io/open-telemetry/opentelemetry-operator/e2e-test-app-java:main",
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false)},
		}), ns: shop, insts: all(upstreamJava(), Java), owners: deploymentOwners(), settings: DefaultSettings()},
		{name: "java-extensions-existing-options", pod: appPod(map[string]string{InjectAnnotation(Java): "java"}, corev1.Container{
			Name: "myapp", Image: "registry.example/shop/app@sha256:0123456789012345678901234567890123456789012345678901234567890123",
			Env: []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS", Value: "-Xmx512m"}, {Name: "OTEL_SERVICE_NAME", Value: "checkout"}, {Name: "OTEL_RESOURCE_ATTRIBUTES", Value: "team=payments,service.version=7"}},
		}), ns: shop, insts: all(javaExt, Java), owners: deploymentOwners(), settings: DefaultSettings()},
		{name: "nodejs", pod: appPod(map[string]string{InjectAnnotation(NodeJS): "true"}, corev1.Container{
			Name: "web", Image: "node:22", Env: []corev1.EnvVar{{Name: "NODE_OPTIONS", Value: "--max-old-space-size=512"}},
		}), ns: shop, insts: all(basic(), NodeJS), owners: []Owner{{Kind: "StatefulSet", Name: "web"}}, settings: DefaultSettings()},
		{name: "python-musl", pod: appPod(map[string]string{InjectAnnotation(Python): "true", AnnotationPythonPlatform: "musl"}, corev1.Container{
			Name: "api", Image: "python:3.13-alpine", Env: []corev1.EnvVar{{Name: "PYTHONPATH", Value: "/app/lib"}},
		}), ns: shop, insts: all(python, Python), owners: []Owner{{Kind: "Job", Name: "report-28999"}, {Kind: "CronJob", Name: "report"}}, settings: DefaultSettings()},
		{name: "dotnet-musl", pod: appPod(map[string]string{InjectAnnotation(DotNet): "true", AnnotationDotNetRuntime: "linux-musl-x64"}, corev1.Container{
			Name: "svc", Image: "mcr.microsoft.com/dotnet/aspnet:9.0-alpine", Env: []corev1.EnvVar{{Name: "DOTNET_STARTUP_HOOKS", Value: "/app/hook.dll"}},
		}), ns: shop, insts: all(basic(), DotNet), owners: []Owner{{Kind: "DaemonSet", Name: "svc"}}, settings: DefaultSettings()},
		{name: "go", pod: appPod(map[string]string{InjectAnnotation(Go): "true", AnnotationGoTargetExe: "/usr/bin/server"}, corev1.Container{
			Name: "server", Image: "registry.example/server:v2.1.0",
		}), ns: shop, insts: all(goInst, Go), owners: deploymentOwners(), settings: enabledAll()},
		{name: "go-without-target-exe", pod: appPod(map[string]string{InjectAnnotation(Go): "true"}), ns: shop, insts: all(goNoExe, Go), owners: deploymentOwners(), settings: enabledAll()},
		{name: "go-disabled", pod: appPod(map[string]string{InjectAnnotation(Go): "true", AnnotationGoTargetExe: "/app"}), ns: shop, insts: all(goNoExe, Go), owners: deploymentOwners(), settings: DefaultSettings()},
		{name: "sdk-tls-uids", pod: appPod(map[string]string{InjectAnnotation(SDK): "true", AnnotationResourcePrefix + "service.name": "checkout", AnnotationResourcePrefix + "team": "payments"}),
			ns: shop, insts: all(tls, SDK), owners: deploymentOwners(), settings: DefaultSettings()},
		{name: "multi-java-python", pod: appPod(map[string]string{
			InjectAnnotation(Java): "true", InjectAnnotation(Python): "true",
			ContainersAnnotation(Java): "backend", ContainersAnnotation(Python): "worker,sidecar-missing",
		}, corev1.Container{Name: "backend", Image: "eclipse-temurin:21"}, corev1.Container{Name: "worker", Image: "python:3.13"}),
			ns: shop, insts: all(basic(), Java, Python), owners: deploymentOwners(), settings: DefaultSettings()},
		{name: "multi-without-container-names", pod: appPod(map[string]string{InjectAnnotation(Java): "true", InjectAnnotation(NodeJS): "true", ContainersAnnotation(Java): "myapp"}),
			ns: shop, insts: all(basic(), Java, NodeJS), owners: deploymentOwners(), settings: DefaultSettings()},
		{name: "namespace-annotation-labels", pod: func() *corev1.Pod {
			p := appPod(nil)
			p.Labels = map[string]string{"app.kubernetes.io/name": "shop-frontend", "app.kubernetes.io/version": "3.2"}
			return p
		}(), ns: metav1.ObjectMeta{Name: "shop", Annotations: map[string]string{InjectAnnotation(NodeJS): "true"}}, insts: all(withLabels, NodeJS), owners: deploymentOwners(), settings: DefaultSettings()},
		{name: "unresolved-and-nginx", pod: appPod(map[string]string{InjectAnnotation(Java): "missing", InjectAnnotation(Nginx): "true", InjectAnnotation(ApacheHttpd): "true"}),
			ns: shop, insts: nil, owners: deploymentOwners(), settings: DefaultSettings()},
		{name: "apache-httpd", pod: appPod(map[string]string{InjectAnnotation(ApacheHttpd): "true"}, corev1.Container{
			Name: "web", Image: "httpd:2.4",
			Env:          []corev1.EnvVar{{Name: "SITE", Value: "shop"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "conf", MountPath: "/usr/local/apache2/conf"}, {Name: "html", MountPath: "/usr/local/apache2/htdocs"}},
		}), ns: shop, insts: all(apache, ApacheHttpd), owners: deploymentOwners(), settings: DefaultSettings()},
		{name: "nginx", pod: appPod(map[string]string{InjectAnnotation(Nginx): "true", ContainersAnnotation(Nginx): "web"}, corev1.Container{
			Name: "web", Image: "nginx:1.27.3",
			Env:          []corev1.EnvVar{{Name: "LD_LIBRARY_PATH", Value: "/opt/lib"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "conf", MountPath: "/etc/nginx/conf.d"}},
		}), ns: shop, insts: all(nginx, Nginx), owners: deploymentOwners(), settings: func() Settings { s := DefaultSettings(); s.Enabled[Nginx] = true; return s }()},
		{name: "java-valuefrom", pod: appPod(map[string]string{InjectAnnotation(Java): "true"}, corev1.Container{
			Name: "myapp", Image: "app:1", Env: []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "opts", LocalObjectReference: corev1.LocalObjectReference{Name: "jvm"}}}}},
		}), ns: shop, insts: all(basic(), Java), owners: deploymentOwners(), settings: DefaultSettings()},
		{name: "java-init-container-target", pod: func() *corev1.Pod {
			p := appPod(map[string]string{InjectAnnotation(Java): "true", AnnotationContainerNames: "migrate,myapp"})
			p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox"}, {Name: "migrate", Image: "flyway:10"}}
			return p
		}(), ns: shop, insts: all(basic(), Java), owners: deploymentOwners(), settings: DefaultSettings()},
	}
}

func ptr[T any](v T) *T { return &v }

func TestMutateGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pod := tc.pod.DeepCopy()
			in := Input{Namespace: tc.ns, Instrumentations: tc.insts, Owners: tc.owners}
			if tc.insts == nil {
				in.Unresolved = map[Language]string{Java: `instrumentations.opentelemetry.io "missing" not found`}
			}
			outcomes := Mutate(pod, in, tc.settings)
			out, err := yaml.Marshal(map[string]any{"outcomes": outcomes, "pod": pod})
			require.NoError(t, err)
			golden.Assert(t, string(out), tc.name+".golden.yaml")

			// Mutating again changes nothing.
			again := pod.DeepCopy()
			Mutate(again, in, tc.settings)
			require.Equal(t, pod, again)
		})
	}
}

func TestAnnotationPrecedence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ ns, pod, want string }{
		{"", "", ""},
		{"", "true", "true"},
		{"", "my-inst", "my-inst"},
		{"true", "", "true"},
		{"other", "", "other"},
		{"false", "true", "true"},
		{"my-inst", "true", "my-inst"},
		{"my-inst", "TRUE", "my-inst"},
		{"true", "false", "false"},
		{"ns-inst", "pod-inst", "pod-inst"},
		{"true", "True", "true"},
	} {
		ns := metav1.ObjectMeta{Annotations: map[string]string{"k": tc.ns}}
		pod := metav1.ObjectMeta{Annotations: map[string]string{"k": tc.pod}}
		require.Equal(t, tc.want, annotationValue(ns, pod, "k"), "ns=%q pod=%q", tc.ns, tc.pod)
	}
}

func TestRequests(t *testing.T) {
	t.Parallel()
	pod := appPod(map[string]string{InjectAnnotation(Java): "true", InjectAnnotation(Python): "False", InjectAnnotation(SDK): "other/inst"})
	ns := metav1.ObjectMeta{Name: "shop", Annotations: map[string]string{InjectAnnotation(DotNet): "dotnet-inst"}}
	require.Equal(t, []Request{
		{Language: Java, Annotation: InjectAnnotation(Java), Value: "true"},
		{Language: DotNet, Annotation: InjectAnnotation(DotNet), Value: "dotnet-inst"},
		{Language: SDK, Annotation: InjectAnnotation(SDK), Value: "other/inst"},
	}, Requests(ns, pod))
}

func TestImageVersion(t *testing.T) {
	t.Parallel()
	for image, want := range map[string]string{
		"app:1.2":          "1.2",
		"app":              "",
		"registry:5000/ap": "",
		"a/b:c@sha256:0123456789012345678901234567890123456789012345678901234567890123": "c@sha256:0123456789012345678901234567890123456789012345678901234567890123",
		"Not A Reference": "",
	} {
		require.Equal(t, want, imageVersion(image), image)
	}
}
