package manifests

import (
	"fmt"
	"strings"
)

// Label keys and values on every object the operator builds.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelComponent = "app.kubernetes.io/component"
	LabelName      = "app.kubernetes.io/name"

	// ManagedBy is the managed-by label value of the operator's objects. It
	// differs from the upstream operator's so the two never adopt each other's
	// objects.
	ManagedBy = "shardwise-operator"
	partOf    = "opentelemetry"

	// ComponentCollector and ComponentTargetAllocator are the component label values.
	ComponentCollector       = "opentelemetry-collector"
	ComponentTargetAllocator = "opentelemetry-targetallocator"

	// LabelTargetAllocator on a collector names an existing TargetAllocator to
	// use instead of creating one.
	LabelTargetAllocator = "opentelemetry.io/target-allocator"

	// AnnotationConfigHash on pod templates carries the hash of the rendered
	// configuration, so a config change rolls the pods.
	AnnotationConfigHash = "opentelemetry-operator-config/sha256"
)

// Container, file and port constants of the built workloads.
const (
	CollectorContainer       = "otc-container"
	CollectorConfigKey       = "collector.yaml"
	collectorConfigVolume    = "otc-internal"
	collectorConfigDir       = "/conf"
	CollectorMonitoringPort  = 8888
	TargetAllocatorContainer = "ta-container"
	TargetAllocatorConfigKey = "targetallocator.yaml"
	targetAllocatorConfigDir = "/conf"
	targetAllocatorVolume    = "ta-internal"
	TargetAllocatorPort      = 8080
	TargetAllocatorSvcPort   = 80
)

// maxNameLength is the longest name valid for every kind built here (a
// Service name is a DNS label).
const maxNameLength = 63

// dnsName formats a name and truncates the instance part so the result fits
// in a DNS label; suffixes are kept whole because they carry the meaning.
func dnsName(instance, suffix string) string {
	if over := len(instance) + len(suffix) - maxNameLength; over > 0 {
		instance = strings.TrimRight(instance[:len(instance)-over], "-.")
	}
	return instance + suffix
}

// CollectorName is the name of the collector StatefulSet, ServiceAccount and PodDisruptionBudget.
func CollectorName(instance string) string { return dnsName(instance, "-collector") }

// CollectorService is the name of the collector Service of the receivers' ports.
func CollectorService(instance string) string { return dnsName(instance, "-collector") }

// HeadlessService is the name of the governing headless Service of the StatefulSet.
func HeadlessService(instance string) string { return dnsName(instance, "-collector-headless") }

// MonitoringService is the name of the Service of the collector's own metrics.
func MonitoringService(instance string) string { return dnsName(instance, "-collector-monitoring") }

// CollectorConfigMap is the name of the collector ConfigMap of a rendered config hash.
func CollectorConfigMap(instance, hash string) string {
	return dnsName(instance, fmt.Sprintf("-collector-%.8s", hash))
}

// TargetAllocatorName is the name of every object of the allocator named taName.
func TargetAllocatorName(taName string) string { return dnsName(taName, "-targetallocator") }

// TargetAllocatorEndpoint is the URL the collectors poll.
func TargetAllocatorEndpoint(taName string) string {
	return fmt.Sprintf("http://%s:%d", TargetAllocatorName(taName), TargetAllocatorSvcPort)
}

// ClusterRoleName is the name of the cluster-scoped RBAC of an allocator,
// which cannot be owned by the namespaced TargetAllocator and so carries the
// namespace in its name.
func ClusterRoleName(namespace, taName string) string {
	return dnsName("shardwise-"+namespace+"-"+taName, "-targetallocator")
}

// SelectorLabels are the labels that select the pods of a component of an instance.
func SelectorLabels(namespace, instance, component string) map[string]string {
	return map[string]string{
		LabelManagedBy: ManagedBy,
		LabelInstance:  namespace + "." + instance,
		LabelPartOf:    partOf,
		LabelComponent: component,
	}
}

// Labels are the labels of an object of a component of an instance.
func Labels(namespace, instance, component, name string) map[string]string {
	l := SelectorLabels(namespace, instance, component)
	l[LabelName] = name
	return l
}
