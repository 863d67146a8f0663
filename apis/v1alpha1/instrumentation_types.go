package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=otelinst;otelinsts
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Endpoint",type="string",JSONPath=".spec.exporter.endpoint"
// +kubebuilder:printcolumn:name="Sampler",type="string",JSONPath=".spec.sampler.type"
// +kubebuilder:printcolumn:name="Sampler Arg",type="string",JSONPath=".spec.sampler.argument"
// +kubebuilder:printcolumn:name="Uninstrumented",type="integer",JSONPath=".status.uninstrumentedPods"

// Instrumentation says how the pod admission webhook instruments the pods
// that ask for it with an instrumentation.opentelemetry.io/inject-<language>
// annotation: which agent image, which exporter endpoint, propagators,
// sampler and resource attributes. Field names follow the upstream
// OpenTelemetry Operator, so its manifests apply unchanged.
type Instrumentation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired instrumentation.
	// +optional
	Spec InstrumentationSpec `json:"spec,omitempty"`
	// status is the observed state; kept for upstream compatibility.
	// +optional
	Status InstrumentationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// InstrumentationList is a list of Instrumentation.
type InstrumentationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Instrumentation `json:"items"`
}

// InstrumentationSpec is the desired state of an Instrumentation.
type InstrumentationSpec struct {
	// exporter is where the SDKs send their telemetry.
	// +optional
	Exporter Exporter `json:"exporter,omitempty"`
	// resource configures the OpenTelemetry resource attributes.
	// +optional
	Resource Resource `json:"resource,omitempty"`
	// propagators become OTEL_PROPAGATORS.
	// +optional
	Propagators []Propagator `json:"propagators,omitempty"`
	// sampler becomes OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG.
	// +optional
	Sampler Sampler `json:"sampler,omitempty"`
	// defaults configures how resource attributes are derived.
	// +optional
	Defaults Defaults `json:"defaults,omitempty"`
	// env is added to every instrumented container, after the language's env.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// java configures the Java agent.
	// +optional
	Java Java `json:"java,omitempty"`
	// nodejs configures the Node.js agent.
	// +optional
	NodeJS NodeJS `json:"nodejs,omitempty"`
	// python configures the Python agent.
	// +optional
	Python Python `json:"python,omitempty"`
	// dotnet configures the .NET agent.
	// +optional
	DotNet DotNet `json:"dotnet,omitempty"`
	// go configures the Go eBPF agent.
	// +optional
	Go Go `json:"go,omitempty"`
	// apacheHttpd configures the Apache HTTPD module.
	// +optional
	// +kubebuilder:default={}
	ApacheHttpd ApacheHttpd `json:"apacheHttpd,omitempty"`
	// nginx configures the Nginx module.
	// +optional
	// +kubebuilder:default={}
	Nginx Nginx `json:"nginx,omitempty"`
	// imagePullPolicy applies to the injected init and sidecar containers.
	// +optional
	// +kubebuilder:validation:Enum=Always;Never;IfNotPresent
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// initContainerSecurityContext applies to the injected init containers;
	// without it they take the first instrumented container's.
	// +optional
	InitContainerSecurityContext *corev1.SecurityContext `json:"initContainerSecurityContext,omitempty"`
}

// Exporter is the OTLP exporter configuration.
type Exporter struct {
	// endpoint becomes OTEL_EXPORTER_OTLP_ENDPOINT.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// tls configures the exporter's certificates, mounted from a Secret or
	// ConfigMap in the pod's namespace.
	// +optional
	TLS *TLS `json:"tls,omitempty"`
}

// TLS names the files of the exporter's certificates.
type TLS struct {
	// secretName is a Secret in the pod's namespace holding cert_file,
	// key_file and, without configMapName, ca_file.
	// +optional
	SecretName string `json:"secretName,omitempty"`
	// configMapName is a ConfigMap in the pod's namespace holding ca_file.
	// +optional
	ConfigMapName string `json:"configMapName,omitempty"`
	// ca_file is the CA's file name in the Secret or ConfigMap, or an absolute path.
	// +optional
	CA string `json:"ca_file,omitempty"`
	// cert_file is the client certificate's file name in the Secret, or an absolute path.
	// +optional
	Cert string `json:"cert_file,omitempty"`
	// key_file is the client key's file name in the Secret, or an absolute path.
	// +optional
	Key string `json:"key_file,omitempty"`
}

// Resource configures the resource attributes.
type Resource struct {
	// resourceAttributes are added to OTEL_RESOURCE_ATTRIBUTES with the lowest
	// precedence.
	// +optional
	Attributes map[string]string `json:"resourceAttributes,omitempty"`
	// addK8sUIDAttributes adds the k8s.*.uid attributes.
	// +optional
	AddK8sUIDAttributes bool `json:"addK8sUIDAttributes,omitempty"`
}

// Propagator is an OTEL_PROPAGATORS entry.
// +kubebuilder:validation:Enum=tracecontext;baggage;b3;b3multi;jaeger;xray;ottrace;none
type Propagator string

// SamplerType is an OTEL_TRACES_SAMPLER value.
// +kubebuilder:validation:Enum=always_on;always_off;traceidratio;parentbased_always_on;parentbased_always_off;parentbased_traceidratio;jaeger_remote;xray
type SamplerType string

// The sampler types.
const (
	AlwaysOn                SamplerType = "always_on"
	AlwaysOff               SamplerType = "always_off"
	TraceIDRatio            SamplerType = "traceidratio"
	ParentBasedAlwaysOn     SamplerType = "parentbased_always_on"
	ParentBasedAlwaysOff    SamplerType = "parentbased_always_off"
	ParentBasedTraceIDRatio SamplerType = "parentbased_traceidratio"
	JaegerRemote            SamplerType = "jaeger_remote"
	XRaySampler             SamplerType = "xray"
)

// Sampler is the trace sampler.
//
// The ratio rule accepts decimal numbers in [0,1] (0, 0.25, .5, 1, 1.0);
// upstream's webhook also accepted exponent forms such as 5e-1, which are
// refused here with the same message.
// +kubebuilder:validation:XValidation:rule="!has(self.type) || !(self.type in ['traceidratio', 'parentbased_traceidratio']) || !has(self.argument) || self.argument.size() == 0 || self.argument.matches('^[+]?(0*1(\\\\.0*)?|0*(\\\\.[0-9]*)?|0*\\\\.[0-9]+)$')",message="spec.sampler.argument must be a number in [0,1] for the traceidratio and parentbased_traceidratio samplers"
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type != 'jaeger_remote' || !has(self.argument) || self.argument.size() == 0 || self.argument.split(',').all(p, p.matches('^[^=]+=[^=]*$') && (!p.startsWith('endpoint=') || p.size() > 9) && (!p.startsWith('pollingIntervalMs=') || p.matches('^pollingIntervalMs=[0-9]+$')) && (!p.startsWith('initialSamplingRate=') || p.matches('^initialSamplingRate=[+]?(0*1(\\\\.0*)?|0*(\\\\.[0-9]*)?|0*\\\\.[0-9]+)$')))",message="spec.sampler.argument for jaeger_remote must be key=value pairs separated by commas: endpoint non-empty, pollingIntervalMs an integer, initialSamplingRate in [0,1]"
type Sampler struct {
	// type is the sampler.
	// +optional
	Type SamplerType `json:"type,omitempty"`
	// argument is the sampler's argument: a ratio in [0,1] for the ratio
	// samplers, key=value pairs for jaeger_remote.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Argument string `json:"argument,omitempty"`
}

// Defaults configures how resource attributes are derived.
type Defaults struct {
	// useLabelsForResourceAttributes derives service.name and service.version
	// from the well-known app.kubernetes.io labels.
	// +optional
	UseLabelsForResourceAttributes bool `json:"useLabelsForResourceAttributes,omitempty"`
}

// Java configures the Java agent. Its resources field is named resources,
// unlike the other languages' resourceRequirements, as upstream.
// +kubebuilder:validation:XValidation:rule="!(has(self.volumeClaimTemplate) && has(self.volumeLimitSize))",message="spec.java.volumeClaimTemplate and spec.java.volumeLimitSize cannot both be defined"
type Java struct {
	// image is the agent image; empty means the operator's default.
	// +optional
	Image string `json:"image,omitempty"`
	// volumeClaimTemplate makes the agent's volume an ephemeral volume.
	// +optional
	VolumeClaimTemplate *corev1.PersistentVolumeClaimTemplate `json:"volumeClaimTemplate,omitempty"`
	// volumeLimitSize is the size limit of the agent's emptyDir (default 200Mi).
	// +optional
	VolumeSizeLimit *resource.Quantity `json:"volumeLimitSize,omitempty"`
	// env is added to the instrumented containers.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// resources of the init containers; missing limits or requests get the
	// upstream defaults at injection.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// extensions are copied next to the agent by one init container each.
	// +optional
	Extensions []Extensions `json:"extensions,omitempty"`
}

// Extensions is a Java agent extension image.
type Extensions struct {
	// image holds the extension.
	// +required
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`
	// dir is the extension's directory in the image.
	// +required
	// +kubebuilder:validation:MinLength=1
	Dir string `json:"dir"`
}

// AgentSpec is what the Node.js, Python and .NET agents take: one init
// container copying the agent into a shared volume.
type AgentSpec struct {
	// image is the agent image; empty means the operator's default.
	// +optional
	Image string `json:"image,omitempty"`
	// volumeClaimTemplate makes the agent's volume an ephemeral volume.
	// +optional
	VolumeClaimTemplate *corev1.PersistentVolumeClaimTemplate `json:"volumeClaimTemplate,omitempty"`
	// volumeLimitSize is the size limit of the agent's emptyDir (default 200Mi).
	// +optional
	VolumeSizeLimit *resource.Quantity `json:"volumeLimitSize,omitempty"`
	// env is added to the instrumented containers.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// resourceRequirements of the init container; missing limits or requests
	// get the upstream defaults at injection.
	// +optional
	Resources corev1.ResourceRequirements `json:"resourceRequirements,omitempty"`
}

// NodeJS configures the Node.js agent.
// +kubebuilder:validation:XValidation:rule="!(has(self.volumeClaimTemplate) && has(self.volumeLimitSize))",message="spec.nodejs.volumeClaimTemplate and spec.nodejs.volumeLimitSize cannot both be defined"
type NodeJS struct {
	AgentSpec `json:",inline"`
}

// Python configures the Python agent.
// +kubebuilder:validation:XValidation:rule="!(has(self.volumeClaimTemplate) && has(self.volumeLimitSize))",message="spec.python.volumeClaimTemplate and spec.python.volumeLimitSize cannot both be defined"
type Python struct {
	AgentSpec `json:",inline"`
}

// DotNet configures the .NET agent.
// +kubebuilder:validation:XValidation:rule="!(has(self.volumeClaimTemplate) && has(self.volumeLimitSize))",message="spec.dotnet.volumeClaimTemplate and spec.dotnet.volumeLimitSize cannot both be defined"
type DotNet struct {
	AgentSpec `json:",inline"`
}

// Go configures the Go eBPF agent, a privileged sidecar.
// +kubebuilder:validation:XValidation:rule="!(has(self.volumeClaimTemplate) && has(self.volumeLimitSize))",message="spec.go.volumeClaimTemplate and spec.go.volumeLimitSize cannot both be defined"
type Go struct {
	// image is the agent image; empty means the operator's default.
	// +optional
	Image string `json:"image,omitempty"`
	// volumeClaimTemplate is accepted for upstream compatibility; the Go agent
	// uses no shared volume.
	// +optional
	VolumeClaimTemplate *corev1.PersistentVolumeClaimTemplate `json:"volumeClaimTemplate,omitempty"`
	// volumeLimitSize is accepted for upstream compatibility.
	// +optional
	VolumeSizeLimit *resource.Quantity `json:"volumeLimitSize,omitempty"`
	// env is added to the agent sidecar.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// resourceRequirements of the agent sidecar; missing limits or requests
	// get the upstream defaults at injection.
	// +optional
	Resources corev1.ResourceRequirements `json:"resourceRequirements,omitempty"`
	// securityContext of the agent sidecar; default privileged, user 0.
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
}

// ApacheHttpd configures the Apache HTTPD module.
// +kubebuilder:validation:XValidation:rule="!(has(self.volumeClaimTemplate) && has(self.volumeLimitSize))",message="spec.apacheHttpd.volumeClaimTemplate and spec.apacheHttpd.volumeLimitSize cannot both be defined"
type ApacheHttpd struct {
	// image is the module image; empty means the operator's default.
	// +optional
	Image string `json:"image,omitempty"`
	// volumeClaimTemplate makes the module's volume an ephemeral volume.
	// +optional
	VolumeClaimTemplate *corev1.PersistentVolumeClaimTemplate `json:"volumeClaimTemplate,omitempty"`
	// volumeLimitSize is the size limit of the module's emptyDir.
	// +optional
	VolumeSizeLimit *resource.Quantity `json:"volumeLimitSize,omitempty"`
	// env is added to the instrumented containers.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// attrs are the module's configuration attributes.
	// +optional
	Attrs []corev1.EnvVar `json:"attrs,omitempty"`
	// version is the Apache HTTPD version, 2.2 or 2.4.
	// +optional
	// +kubebuilder:default="2.4"
	Version string `json:"version,omitempty"`
	// configPath is Apache HTTPD's configuration directory.
	// +optional
	// +kubebuilder:default="/usr/local/apache2/conf"
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._/-]*$`
	// +kubebuilder:validation:MaxLength=256
	ConfigPath string `json:"configPath,omitempty"`
	// resourceRequirements of the init container; missing limits or requests
	// get the upstream defaults at injection..
	// +optional
	Resources corev1.ResourceRequirements `json:"resourceRequirements,omitempty"`
}

// Nginx configures the Nginx module.
// +kubebuilder:validation:XValidation:rule="!(has(self.volumeClaimTemplate) && has(self.volumeLimitSize))",message="spec.nginx.volumeClaimTemplate and spec.nginx.volumeLimitSize cannot both be defined"
type Nginx struct {
	// image is the module image; empty means the operator's default.
	// +optional
	Image string `json:"image,omitempty"`
	// volumeClaimTemplate makes the module's volume an ephemeral volume.
	// +optional
	VolumeClaimTemplate *corev1.PersistentVolumeClaimTemplate `json:"volumeClaimTemplate,omitempty"`
	// volumeLimitSize is the size limit of the module's emptyDir.
	// +optional
	VolumeSizeLimit *resource.Quantity `json:"volumeLimitSize,omitempty"`
	// env is added to the instrumented containers.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// attrs are the module's configuration attributes.
	// +optional
	Attrs []corev1.EnvVar `json:"attrs,omitempty"`
	// configFile is Nginx's configuration file.
	// +optional
	// +kubebuilder:default="/etc/nginx/nginx.conf"
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._/-]*$`
	// +kubebuilder:validation:MaxLength=256
	ConfigFile string `json:"configFile,omitempty"`
	// resourceRequirements of the init container; missing limits or requests
	// get the upstream defaults at injection..
	// +optional
	Resources corev1.ResourceRequirements `json:"resourceRequirements,omitempty"`
}

// InstrumentationStatus is the observed state of an Instrumentation.
type InstrumentationStatus struct {
	// upgradeBlockedVersions is kept for upstream compatibility.
	// +optional
	UpgradeBlockedVersions map[string]string `json:"upgradeBlockedVersions,omitempty"`
	// uninstrumentedPods counts the pods of this namespace that ask for this
	// Instrumentation (by their annotations or their namespace's) and were
	// not instrumented: created before it existed or while the pod webhook
	// was down, or refused by it. A restart of their workload instruments
	// them.
	// +optional
	UninstrumentedPods int32 `json:"uninstrumentedPods,omitempty"`
	// uninstrumentedPodNames are the first five of them, by name.
	// +optional
	// +listType=atomic
	UninstrumentedPodNames []string `json:"uninstrumentedPodNames,omitempty"`
	// restarting is the workload (Kind/name) the operator restarted last to
	// instrument its pods, with the annotation
	// instrumentation.shardwise.io/restart-uninstrumented: "true"; the next
	// waits until its rollout is done.
	// +optional
	Restarting string `json:"restarting,omitempty"`
	// restarted are the workloads restarted so far (at most 1000), each
	// once: a workload whose new pods are still not instrumented (the
	// webhook refuses them) is not restarted again.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	Restarted []string `json:"restarted,omitempty"`
}
