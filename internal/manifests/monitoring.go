package manifests

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests/container"
)

// Labels of the collector Services that tell them apart, as upstream: the
// ServiceMonitor selects the monitoring Service by its type.
const (
	LabelServiceType       = "operator.opentelemetry.io/collector-service-type"
	labelHeadlessService   = "operator.opentelemetry.io/collector-headless-service"
	labelMonitoringService = "operator.opentelemetry.io/collector-monitoring-service"
	valueExists            = "Exists"
)

// Values of LabelServiceType.
const (
	ServiceTypeBase       = "base"
	ServiceTypeHeadless   = "headless"
	ServiceTypeMonitoring = "monitoring"
)

// MonitoringGroupVersion is the API of prometheus-operator's ServiceMonitor
// and PodMonitor.
var MonitoringGroupVersion = schema.GroupVersion{Group: "monitoring.coreos.com", Version: "v1"}

// monitoringServicePort is the port name of the monitoring Service.
const monitoringServicePort = "monitoring"

// serviceLabels are the labels of a collector Service of a type.
func serviceLabels(labels map[string]string, serviceType string) map[string]string {
	out := maps.Clone(labels)
	out[LabelServiceType] = serviceType
	switch serviceType {
	case ServiceTypeHeadless:
		out[labelHeadlessService] = valueExists
	case ServiceTypeMonitoring:
		out[labelMonitoringService] = valueExists
	}
	return out
}

// MonitoringServiceMonitor is the name of the ServiceMonitor of a collector's
// monitoring Service: upstream's naming.ServiceMonitor("<name>-monitoring").
func MonitoringServiceMonitor(instance string) string {
	return dnsName(instance+"-monitoring", "-collector")
}

// ExporterServiceMonitor is the name of the ServiceMonitor of a collector's
// prometheus exporters on its base Service.
func ExporterServiceMonitor(instance string) string { return dnsName(instance, "-collector") }

// SidecarPodMonitor is the name of the PodMonitor of a sidecar-mode collector.
func SidecarPodMonitor(instance string) string { return dnsName(instance, "-collector") }

// monitorLabels are the labels of a ServiceMonitor or PodMonitor: the
// observability.metrics.extraLabels, then the operator's own, which win, since
// the operator finds and prunes its objects by them (upstream lets the extra
// labels overwrite them).
func monitorLabels(c *v1beta1.OpenTelemetryCollector, name string) map[string]string {
	out := maps.Clone(c.Spec.Observability.Metrics.ExtraLabels)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, Labels(c.Namespace, c.Name, ComponentCollector, name))
	return out
}

// serviceMonitors are the ServiceMonitors of a workload collector with
// observability.metrics.enableMetrics, as upstream: <name>-monitoring-collector
// for its own metrics on the monitoring Service, and <name>-collector for
// the ports of its prometheus exporters (exporterPorts, named as on the base
// Service) when there are any.
func serviceMonitors(c *v1beta1.OpenTelemetryCollector, exporterPorts []string) []client.Object {
	if !c.Spec.Observability.Metrics.EnableMetrics {
		return nil
	}
	build := func(name, serviceType string, ports []string) client.Object {
		selector := SelectorLabels(c.Namespace, c.Name, ComponentCollector)
		selector[LabelServiceType] = serviceType
		endpoints := make([]any, len(ports))
		for i, p := range ports {
			endpoints[i] = map[string]any{"port": p}
		}
		return monitor(c, "ServiceMonitor", name, map[string]any{
			"endpoints":         endpoints,
			"namespaceSelector": map[string]any{"matchNames": []any{c.Namespace}},
			"selector":          map[string]any{"matchLabels": stringMap(selector)},
		})
	}
	out := []client.Object{build(MonitoringServiceMonitor(c.Name), ServiceTypeMonitoring, []string{monitoringServicePort})}
	if len(exporterPorts) > 0 {
		out = append(out, build(ExporterServiceMonitor(c.Name), ServiceTypeBase, exporterPorts))
	}
	return out
}

// monitor is a prometheus-operator object of a collector, unstructured as
// cert-manager's are: the operator does not cache prometheus-operator's
// kinds, whose API may not be served, nor link their Go types.
func monitor(c *v1beta1.OpenTelemetryCollector, kind, name string, spec map[string]any) client.Object {
	return monitorObject(c.Namespace, kind, name, monitorLabels(c, name), spec)
}

// monitorObject is a prometheus-operator object of kind, unstructured.
func monitorObject(ns, kind, name string, labels map[string]string, spec map[string]any) client.Object {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(MonitoringGroupVersion.WithKind(kind))
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// exporterPortNames are the names, in ports (the base Service's), of the
// exporter ports.
func exporterPortNames(ports []corev1.ServicePort, exporters []corev1.ServicePort) []string {
	var out []string
	for _, p := range ports {
		if slices.ContainsFunc(exporters, func(e corev1.ServicePort) bool { return e.Port == p.Port }) {
			out = append(out, p.Name)
		}
	}
	return out
}

// podMonitor is the PodMonitor that scrapes the collectors injected as
// sidecars, when observability.metrics.enableMetrics is set; nil otherwise.
// It selects the pods by the label the pod webhook puts on them and scrapes
// the injected container's metrics port and prometheus exporters. Upstream's
// selects the collector's workload labels and a port named monitoring,
// neither of which an injected pod carries.
func podMonitor(c *v1beta1.OpenTelemetryCollector) (client.Object, error) {
	if !c.Spec.Observability.Metrics.EnableMetrics {
		return nil, nil
	}
	if _, err := configMap(c.Spec.Config); err != nil {
		return nil, err
	}
	// The injected container's own names for its metrics and exporter
	// ports (a user port may have taken an exporter's).
	endpoints := []any{map[string]any{"port": metricsPortName}}
	ctrPorts := container.Ports(c.Spec.Config, c.Spec.Ports)
	for _, p := range container.ExporterPorts(c.Spec.Config) {
		i := slices.IndexFunc(ctrPorts, func(cp corev1.ContainerPort) bool { return cp.ContainerPort == p.Port && cp.Protocol == p.Protocol })
		if i >= 0 && ctrPorts[i].Name != metricsPortName {
			endpoints = append(endpoints, map[string]any{"port": ctrPorts[i].Name})
		}
	}
	return monitor(c, "PodMonitor", SidecarPodMonitor(c.Name), map[string]any{
		"jobLabel":            LabelInstance,
		"podTargetLabels":     []any{LabelName, LabelInstance, LabelManagedBy},
		"namespaceSelector":   map[string]any{"matchNames": []any{c.Namespace}},
		"selector":            map[string]any{"matchLabels": map[string]any{LabelSidecarInjected: InstanceLabel(c.Namespace, c.Name)}},
		"podMetricsEndpoints": endpoints,
	}), nil
}
