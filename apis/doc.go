// Package apis holds the custom resource types shardwise serves, one package
// per API version of group opentelemetry.io: v1beta1 (OpenTelemetryCollector)
// and v1alpha1 (TargetAllocator). It imports only k8s.io/api and
// k8s.io/apimachinery, so it can become its own module.
package apis
