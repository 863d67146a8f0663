package instrumentation

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardwise/shardwise/internal/annotation"
)

// The pod (or namespace) annotations, as upstream.
const (
	AnnotationContainerNames       = "instrumentation.opentelemetry.io/container-names"
	AnnotationPythonPlatform       = "instrumentation.opentelemetry.io/otel-python-platform"
	AnnotationDotNetRuntime        = "instrumentation.opentelemetry.io/otel-dotnet-auto-runtime"
	AnnotationGoTargetExe          = "instrumentation.opentelemetry.io/otel-go-auto-target-exe"
	AnnotationResourcePrefix       = "resource.opentelemetry.io/"
	annotationPrefix               = "instrumentation.opentelemetry.io/"
	annotationNginxContainersQuirk = "instrumentation.opentelemetry.io/inject-nginx-container-names"

	// AnnotationInjected marks a pod this mutator changed, with the languages
	// it injected; a pod carrying it is never mutated again.
	AnnotationInjected = "instrumentation.shardwise.io/injected"
)

// InjectAnnotation is the annotation that asks for language l.
func InjectAnnotation(l Language) string { return annotationPrefix + "inject-" + string(l) }

// ContainersAnnotation is the annotation naming the containers of language l.
// Nginx's is inject-nginx-container-names, upstream's spelling.
func ContainersAnnotation(l Language) string {
	if l == Nginx {
		return annotationNginxContainersQuirk
	}
	return annotationPrefix + string(l) + "-container-names"
}

// annotationValue resolves an annotation set on the namespace, the pod or
// both (annotation.Effective).
func annotationValue(ns, pod metav1.ObjectMeta, key string) string {
	return annotation.Effective(ns.Annotations[key], pod.Annotations[key])
}
