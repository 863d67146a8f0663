// Package annotation holds the upstream OpenTelemetry Operator's rule for an
// injection annotation set on both a pod and its namespace, shared by the
// sidecar and the instrumentation mutators. It imports nothing but the
// standard library.
package annotation

import "strings"

// Effective is the value that applies when a namespace and a pod carry the
// same injection annotation: the pod's wins, unless it is "true" and the
// namespace names something other than "false" (then the namespace's more
// specific value wins), as upstream.
func Effective(nsValue, podValue string) string {
	switch {
	case nsValue == "":
		return podValue
	case podValue == "":
		return nsValue
	case !strings.EqualFold(podValue, "true"):
		return podValue
	case strings.EqualFold(nsValue, "false"):
		return podValue
	default:
		return nsValue
	}
}
