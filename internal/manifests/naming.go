package manifests

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/shardwise/shardwise/internal/manifests/container"
)

// Label keys and values on every object the operator builds.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelComponent = "app.kubernetes.io/component"
	LabelName      = "app.kubernetes.io/name"
	LabelVersion   = "app.kubernetes.io/version"

	// ManagedBy is the managed-by label value of the operator's objects:
	// the upstream operator's, so that the selectors of the workloads it
	// built, which are immutable, are the ones shardwise builds, and taking
	// over from it rolls at most, never recreates. The two must never run in
	// one cluster.
	ManagedBy = "opentelemetry-operator"
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
	CollectorContainer       = container.Name
	CollectorConfigKey       = "collector.yaml"
	collectorConfigVolume    = "otc-internal"
	CollectorMonitoringPort  = container.DefaultMetricsPort
	TargetAllocatorContainer = "ta-container"
	TargetAllocatorConfigKey = "targetallocator.yaml"
	targetAllocatorConfigDir = "/conf"
	targetAllocatorVolume    = "ta-internal"
	TargetAllocatorPort      = 8080
	TargetAllocatorSvcPort   = 80
)

// maxNameLength is the longest name valid for every kind built here (a
// Service name is a DNS label), and the longest label value.
const maxNameLength = 63

// hashLength is the number of hex digits of the hash that a truncated name
// carries, so two long names that share a prefix stay distinct.
const hashLength = 8

// shortHash is the first hashLength hex digits of the SHA-256 of s.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:hashLength]
}

// Truncate returns s when it has at most max characters; otherwise a prefix
// of s, a dash and a short hash of the whole of s, max characters at most.
// Different inputs give different outputs (up to hash collisions), the
// result never ends in '-' or '.' before the hash, and it is a pure function
// of (s, max). max must exceed hashLength+1.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	prefix := strings.TrimRight(s[:max-hashLength-1], "-.")
	return prefix + "-" + shortHash(s)
}

// dnsName formats a name that fits in a DNS label. The suffix is kept whole
// because it carries the meaning; when the instance must be shortened, a hash
// of the whole instance name keeps the result unique.
func dnsName(instance, suffix string) string {
	if len(instance)+len(suffix) <= maxNameLength {
		return instance + suffix
	}
	return Truncate(instance, maxNameLength-len(suffix)) + suffix
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

// ClusterRoleName is the name of the cluster-scoped RBAC of an allocator.
func ClusterRoleName(namespace, taName string) string {
	return ClusterScopedName(namespace, taName, "-targetallocator")
}

// ClusterScopedName is the name of a cluster-scoped object of a namespaced
// resource, which cannot own it: the namespace and the name, readable, and a
// hash of both, so that ("team", "a-x") and ("team-a", "x") never share one,
// then the suffix.
func ClusterScopedName(namespace, name, suffix string) string {
	const prefix = "shardwise-"
	id := shortHash(namespace + "/" + name)
	readable := strings.TrimRight(namespace+"-"+name, "-.")
	if room := maxNameLength - len(prefix) - len(suffix) - hashLength - 1; len(readable) > room {
		readable = strings.TrimRight(readable[:room], "-.")
	}
	return prefix + readable + "-" + id + suffix
}

// InstanceLabel is the value of LabelInstance of an instance: namespace.name,
// truncated with a hash to fit in a label value.
func InstanceLabel(namespace, instance string) string {
	return Truncate(namespace+"."+instance, maxNameLength)
}

// SelectorLabels are the labels that select the pods of a component of an instance.
func SelectorLabels(namespace, instance, component string) map[string]string {
	return map[string]string{
		LabelManagedBy: ManagedBy,
		LabelInstance:  InstanceLabel(namespace, instance),
		LabelPartOf:    partOf,
		LabelComponent: component,
	}
}

// VersionLabel is the app.kubernetes.io/version of an image, as upstream's
// manifestutils.Labels reads it: the tag, the part before @sha256 of a
// digest reference, "latest" without a tag.
func VersionLabel(image string) string {
	parts := strings.Split(image, ":")
	var digested string
	for _, p := range parts {
		if before, ok := strings.CutSuffix(p, "@sha256"); ok {
			digested = before
		}
	}
	switch len(parts) {
	case 3:
		return digested
	case 2:
		return truncateLabel(parts[1])
	default:
		return "latest"
	}
}

// truncateLabel cuts a label value to 63 characters and trims what is not
// alphanumeric from its ends, as upstream's naming.Truncate.
func truncateLabel(s string) string {
	if len(s) > maxNameLength {
		s = s[:maxNameLength]
	}
	alphanumeric := func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' }
	return strings.TrimFunc(s, func(r rune) bool { return !alphanumeric(r) })
}

// Labels are the labels of an object of a component of an instance.
func Labels(namespace, instance, component, name string) map[string]string {
	l := SelectorLabels(namespace, instance, component)
	l[LabelName] = name
	return l
}
