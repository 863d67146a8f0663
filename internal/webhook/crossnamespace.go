package webhook

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AllowNamespacesAnnotation is the annotation that, on an
// OpenTelemetryCollector or an Instrumentation, lists the namespaces (comma-separated; "*" for every one)
// whose pods may name the resource as <namespace>/<name> in an injection
// annotation. A reference hands the pod the resource's configuration,
// exporter headers and literal environment values, read with the operator's
// rights, so the resource's owner decides who may have them. Without the
// annotation only pods of the resource's own namespace get it.
const AllowNamespacesAnnotation = "shardwise.io/allow-namespaces"

// ErrCrossNamespace is wrapped by the refusal of a <namespace>/<name>
// reference the referenced resource does not allow.
var ErrCrossNamespace = errors.New("cross-namespace reference refused")

// CrossNamespace is the pod webhook's policy for <namespace>/<name>
// references to another namespace's collector or Instrumentation.
type CrossNamespace struct {
	// AllowAll admits every such reference, as the upstream operator does
	// (the operator's --allow-cross-namespace-references).
	AllowAll bool
}

// check refuses obj to a pod of podNamespace unless obj is in that
// namespace, allows it by AllowNamespacesAnnotation, or the policy allows all.
func (p CrossNamespace) check(kind string, obj metav1.Object, podNamespace string) error {
	if p.AllowAll || obj.GetNamespace() == podNamespace {
		return nil
	}
	for _, ns := range strings.Split(obj.GetAnnotations()[AllowNamespacesAnnotation], ",") {
		if ns = strings.TrimSpace(ns); ns == "*" || ns == podNamespace {
			return nil
		}
	}
	return fmt.Errorf("%w: %s %s/%s does not allow pods of namespace %s: its annotation %s lists the namespaces that may use it (the operator's --allow-cross-namespace-references allows every one)",
		ErrCrossNamespace, kind, obj.GetNamespace(), obj.GetName(), podNamespace, AllowNamespacesAnnotation)
}
