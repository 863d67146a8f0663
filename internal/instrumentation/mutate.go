package instrumentation

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardwise/shardwise/apis/v1alpha1"
)

// Language is an auto-instrumentation language, spelled as in the
// inject-<language> annotation.
type Language string

// The languages, in upstream's injection order.
const (
	Java        Language = "java"
	NodeJS      Language = "nodejs"
	Python      Language = "python"
	DotNet      Language = "dotnet"
	Go          Language = "go"
	ApacheHttpd Language = "apache-httpd"
	Nginx       Language = "nginx"
	SDK         Language = "sdk"
)

// Languages lists every language in injection order.
var Languages = []Language{Java, NodeJS, Python, DotNet, Go, ApacheHttpd, Nginx, SDK}

// Result is what happened to one requested language.
type Result string

// The results; they are the values of the metric's result label.
const (
	// Injected: the agent and environment were added.
	Injected Result = "injected"
	// AlreadyInjected: the pod already carries an agent; nothing was changed.
	AlreadyInjected Result = "already-injected"
	// Disabled: the operator runs with this language turned off.
	Disabled Result = "disabled"
	// Unresolved: the annotation names no usable Instrumentation.
	Unresolved Result = "unresolved"
	// Invalid: the pod's annotations or containers do not allow injection.
	Invalid Result = "invalid"
)

// Outcome reports one requested language.
type Outcome struct {
	Language Language `json:"language"`
	// Annotation is the inject annotation that asked for the language, and
	// Value its value (from the pod or its namespace).
	Annotation string `json:"annotation"`
	Value      string `json:"value"`
	Result     Result `json:"result"`
	// Reason says why the language was not injected, or which containers
	// were left out of an injection; empty when everything was done.
	Reason string `json:"reason,omitempty"`
}

// Request is a language a pod asks for, with the annotation value the caller
// must resolve to an Instrumentation: "true" (the only one in the pod's
// namespace), "<name>" or "<namespace>/<name>".
type Request struct {
	Language   Language
	Annotation string
	Value      string
}

// Owner is one object of the pod's owner chain (ReplicaSet, Deployment,
// StatefulSet, DaemonSet, Job, CronJob), as the caller resolved it.
type Owner struct {
	Kind string
	Name string
	UID  types.UID
}

// Input is what the mutator needs besides the pod.
type Input struct {
	// Namespace is the pod's namespace: its name and annotations.
	Namespace metav1.ObjectMeta
	// Instrumentations maps each resolved request to its Instrumentation.
	Instrumentations map[Language]*v1alpha1.Instrumentation
	// Unresolved maps a request that could not be resolved to the reason.
	Unresolved map[Language]string
	// Owners is the pod's owner chain, nearest first.
	Owners []Owner
}

// Settings are the operator-level choices.
type Settings struct {
	// Images are the default agent images per language, for Instrumentations
	// that name none.
	Images map[Language]string
	// Enabled says which languages may be injected.
	Enabled map[Language]bool
	// MultiInstrumentation allows several languages in one pod, with
	// <language>-container-names.
	MultiInstrumentation bool
}

// Default images, from upstream's versions.txt (operator v0.158.0).
const (
	DefaultJavaImage        = "ghcr.io/open-telemetry/opentelemetry-operator/autoinstrumentation-java:2.30.0"
	DefaultNodeJSImage      = "ghcr.io/open-telemetry/opentelemetry-operator/autoinstrumentation-nodejs:0.78.0"
	DefaultPythonImage      = "ghcr.io/open-telemetry/opentelemetry-operator/autoinstrumentation-python:0.64b0"
	DefaultDotNetImage      = "ghcr.io/open-telemetry/opentelemetry-operator/autoinstrumentation-dotnet:1.16.0"
	DefaultGoImage          = "ghcr.io/open-telemetry/opentelemetry-go-instrumentation/autoinstrumentation-go:v0.24.0"
	DefaultApacheHttpdImage = "ghcr.io/open-telemetry/opentelemetry-operator/autoinstrumentation-apache-httpd:1.0.4"
)

// DefaultSettings are upstream's defaults: every language but Go and Nginx
// enabled, multi-instrumentation on.
func DefaultSettings() Settings {
	return Settings{
		Images: map[Language]string{
			Java: DefaultJavaImage, NodeJS: DefaultNodeJSImage, Python: DefaultPythonImage,
			DotNet: DefaultDotNetImage, Go: DefaultGoImage, ApacheHttpd: DefaultApacheHttpdImage, Nginx: DefaultApacheHttpdImage,
		},
		Enabled: map[Language]bool{
			Java: true, NodeJS: true, Python: true, DotNet: true, ApacheHttpd: true, SDK: true, Go: false, Nginx: false,
		},
		MultiInstrumentation: true,
	}
}

// Requests returns the languages the pod asks for, in injection order, with
// the namespace's annotation applying as upstream's precedence table says.
// Values "" and "false" (any case) ask for nothing.
func Requests(ns metav1.ObjectMeta, pod *corev1.Pod) []Request {
	var reqs []Request
	for _, l := range Languages {
		key := InjectAnnotation(l)
		v := annotationValue(ns, pod.ObjectMeta, key)
		if v == "" || strings.EqualFold(v, "false") {
			continue
		}
		reqs = append(reqs, Request{Language: l, Annotation: key, Value: v})
	}
	return reqs
}

var containerNamesPattern = regexp.MustCompile(`^[a-zA-Z0-9-,]+$`)

// target is one language to inject with its Instrumentation and containers.
type target struct {
	lang       Language
	inst       *v1alpha1.Instrumentation
	containers []string
	outcome    *Outcome
}

// Mutate injects into pod what its annotations ask for and returns one
// outcome per requested language. The pod is changed only for outcomes with
// result Injected. Mutate never panics on any pod.
func Mutate(pod *corev1.Pod, in Input, s Settings) []Outcome {
	reqs := Requests(in.Namespace, pod)
	if len(reqs) == 0 {
		return nil
	}
	outcomes := make([]Outcome, len(reqs))
	for i, r := range reqs {
		outcomes[i] = Outcome{Language: r.Language, Annotation: r.Annotation, Value: r.Value}
	}
	all := func(res Result, reason string) []Outcome {
		for i := range outcomes {
			if outcomes[i].Result == "" {
				outcomes[i].Result, outcomes[i].Reason = res, reason
			}
		}
		return outcomes
	}
	if why := alreadyInjected(pod); why != "" {
		return all(AlreadyInjected, why)
	}
	if len(pod.Spec.Containers) == 0 {
		return all(Invalid, "the pod has no containers")
	}

	var targets []*target
	for i, r := range reqs {
		o := &outcomes[i]
		switch inst := in.Instrumentations[r.Language]; {
		case !s.Enabled[r.Language]:
			o.Result = Disabled
			o.Reason = fmt.Sprintf("support for %s auto-instrumentation is not enabled in the operator (--enable-%s-instrumentation)", r.Language, r.Language)
		case inst == nil:
			o.Result = Unresolved
			o.Reason = in.Unresolved[r.Language]
			if o.Reason == "" {
				o.Reason = fmt.Sprintf("no Instrumentation resolved for %q", r.Value)
			}
		default:
			targets = append(targets, &target{lang: r.Language, inst: inst, outcome: o})
		}
	}
	if len(targets) == 0 {
		return outcomes
	}

	if reason := assignContainers(pod, in, s, targets); reason != "" {
		return all(Invalid, reason)
	}

	injected := make([]string, 0, len(targets))
	for _, t := range targets {
		if len(t.containers) == 0 {
			t.containers = []string{pod.Spec.Containers[0].Name}
		}
		inj := &injector{pod: pod, in: in, inst: t.inst, s: s}
		ok, reason := inj.inject(t.lang, t.containers)
		t.outcome.Reason = reason
		if ok {
			t.outcome.Result = Injected
			injected = append(injected, string(t.lang))
		} else {
			t.outcome.Result = Invalid
		}
	}
	if len(injected) > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[AnnotationInjected] = strings.Join(injected, ",")
	}
	return outcomes
}

// assignContainers gives each target its container names: the common list
// for every language, then (with multi-instrumentation) each language's own
// list appended. It returns why the annotations are invalid, or "".
func assignContainers(pod *corev1.Pod, in Input, s Settings, targets []*target) string {
	common := annotationValue(in.Namespace, pod.ObjectMeta, AnnotationContainerNames)
	if common != "" && !containerNamesPattern.MatchString(common) {
		return fmt.Sprintf("annotation %s=%q has characters other than letters, digits, '-' and ','", AnnotationContainerNames, common)
	}
	for _, t := range targets {
		if common != "" {
			t.containers = strings.Split(common, ",")
		}
	}
	if !s.MultiInstrumentation {
		return ""
	}
	for _, t := range targets {
		key := ContainersAnnotation(t.lang)
		v := annotationValue(in.Namespace, pod.ObjectMeta, key)
		if v == "" {
			continue
		}
		if !containerNamesPattern.MatchString(v) {
			return fmt.Sprintf("annotation %s=%q has characters other than letters, digits, '-' and ','", key, v)
		}
		t.containers = append(t.containers, strings.Split(v, ",")...)
	}
	return checkContainers(targets)
}

// inject injects lang's agent into the named containers; it says whether
// any got it, and what went wrong.
func (j *injector) inject(lang Language, containers []string) (bool, string) {
	switch lang {
	case Java:
		return j.java(containers)
	case NodeJS:
		return j.nodejs(containers)
	case Python:
		return j.python(containers, annotationValue(j.in.Namespace, j.pod.ObjectMeta, AnnotationPythonPlatform))
	case DotNet:
		return j.dotnet(containers, annotationValue(j.in.Namespace, j.pod.ObjectMeta, AnnotationDotNetRuntime))
	case Go:
		return j.golang(containers)
	case ApacheHttpd:
		return j.apacheHttpd(containers)
	case Nginx:
		return j.nginx(containers)
	case SDK:
		return j.sdk(containers)
	}
	return false, fmt.Sprintf("language %s is not supported", lang)
}

// checkContainers applies upstream's rules for several languages: no
// duplicate inside one language's list, and with more than one language
// every language names its containers.
func checkContainers(targets []*target) string {
	without := 0
	for _, t := range targets {
		if len(t.containers) == 0 {
			without++
		}
		seen := map[string]bool{}
		var dups []string
		for _, c := range t.containers {
			if c != "" && seen[c] && !slices.Contains(dups, c) {
				dups = append(dups, c)
			}
			seen[c] = true
		}
		if len(dups) > 0 {
			sort.Strings(dups)
			return fmt.Sprintf("duplicated container names for %s: %s", t.lang, strings.Join(dups, ","))
		}
	}
	if len(targets) > 1 && without > 0 {
		return "incorrect instrumentation configuration - please provide container names for all instrumentations"
	}
	return ""
}

// Names of what the mutator injects.
const (
	initContainerName = "opentelemetry-auto-instrumentation"
	volumeName        = "opentelemetry-auto-instrumentation"
	goSidecarName     = "opentelemetry-auto-instrumentation"
	collectorSidecar  = "otc-container"
)

var injectedInitContainers = []string{
	initContainerName + "-dotnet", initContainerName + "-java", initContainerName + "-nodejs", initContainerName + "-python",
	"otel-agent-attach-apache", "otel-agent-source-container-clone", "otel-agent-attach-nginx",
}

// alreadyInjected says why the pod counts as already instrumented, or "".
// Beyond upstream's checks (agent init containers, the Go sidecar, the node
// name variable) the marker annotation catches an SDK-only injection into a
// pod whose node is already known, which upstream injects twice.
func alreadyInjected(pod *corev1.Pod) string {
	if v, ok := pod.Annotations[AnnotationInjected]; ok {
		return fmt.Sprintf("the pod is already instrumented (annotation %s=%q)", AnnotationInjected, v)
	}
	for _, c := range pod.Spec.InitContainers {
		if slices.Contains(injectedInitContainers, c.Name) {
			return fmt.Sprintf("the pod is already instrumented (init container %s)", c.Name)
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == goSidecarName {
			return fmt.Sprintf("the pod is already instrumented (container %s)", c.Name)
		}
		if c.Name == collectorSidecar {
			continue
		}
		if envIndex(c.Env, envNodeName) >= 0 {
			return fmt.Sprintf("the pod is already instrumented (container %s sets %s)", c.Name, envNodeName)
		}
	}
	return ""
}

var defaultVolumeSize = resource.MustParse("200Mi")

// volume is a language's shared volume: the ephemeral claim template if one
// is set, else an emptyDir limited to volumeLimitSize (default 200Mi).
func volume(name string, tmpl *corev1.PersistentVolumeClaimTemplate, size *resource.Quantity) corev1.Volume {
	if tmpl != nil {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: tmpl.DeepCopy()}}}
	}
	limit := defaultVolumeSize.DeepCopy()
	if size != nil {
		limit = size.DeepCopy()
	}
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}}
}

// defaultResources fills missing limits and requests with upstream's
// defaults for the language, separately, as upstream's defaulting webhook.
func defaultResources(r corev1.ResourceRequirements, l Language) corev1.ResourceRequirements {
	r = *r.DeepCopy()
	if r.Limits == nil {
		r.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	}
	if r.Requests == nil {
		cpu, mem := "50m", "64Mi"
		switch l {
		case NodeJS, DotNet:
			mem = "128Mi"
		case ApacheHttpd, Nginx:
			cpu, mem = "1m", "128Mi"
		}
		r.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	return r
}

func image(specImage string, l Language, s Settings) string {
	if specImage != "" {
		return specImage
	}
	return s.Images[l]
}
