package manifests

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/shardwise/shardwise/apis/v1beta1"
)

// defaultPort is a listening protocol of a receiver type with its default port.
type defaultPort struct {
	protocol string // key under protocols:, or "" for the receiver's own endpoint
	port     int32
	l4       corev1.Protocol
}

// receiverPorts are the defaults of the receivers that listen. Receivers not
// listed listen only where their config says (an endpoint with a port).
var receiverPorts = map[string][]defaultPort{
	"otlp":       {{"grpc", 4317, corev1.ProtocolTCP}, {"http", 4318, corev1.ProtocolTCP}},
	"jaeger":     {{"grpc", 14250, corev1.ProtocolTCP}, {"thrift_http", 14268, corev1.ProtocolTCP}, {"thrift_compact", 6831, corev1.ProtocolUDP}, {"thrift_binary", 6832, corev1.ProtocolUDP}},
	"zipkin":     {{"", 9411, corev1.ProtocolTCP}},
	"opencensus": {{"", 55678, corev1.ProtocolTCP}},
}

var invalidPortName = regexp.MustCompile(`[^a-z0-9-]+`)

// portName makes an IANA service name (at most 15 characters) from parts.
func portName(parts ...string) string {
	n := invalidPortName.ReplaceAllString(strings.ToLower(strings.Join(parts, "-")), "-")
	if len(n) > 15 {
		n = n[:15]
	}
	return strings.Trim(n, "-")
}

// endpointPort returns the port of a host:port endpoint, or 0.
func endpointPort(cfg map[string]any) int32 {
	ep, _ := cfg["endpoint"].(string)
	if ep == "" {
		return 0
	}
	_, p, err := net.SplitHostPort(ep)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(p, 10, 32)
	if err != nil || n <= 0 || n > 65535 {
		return 0
	}
	return int32(n)
}

// ReceiverPorts infers the ports the collector listens on from the receivers
// used in a pipeline, sorted by port. The prometheus receiver scrapes and
// listens on nothing.
func ReceiverPorts(cfg map[string]any) []corev1.ServicePort {
	receivers, _ := cfg["receivers"].(map[string]any)
	used := usedComponents(cfg, "receivers")
	var ports []corev1.ServicePort
	seen := map[int32]bool{}
	add := func(name string, port int32, proto corev1.Protocol) {
		if port == 0 || seen[port] {
			return
		}
		seen[port] = true
		ports = append(ports, corev1.ServicePort{Name: name, Port: port, Protocol: proto, TargetPort: intOrStr(port)})
	}
	ids := make([]string, 0, len(receivers))
	for id := range receivers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if !used[id] {
			continue
		}
		typ, _, _ := strings.Cut(id, "/")
		rc, _ := receivers[id].(map[string]any)
		defaults, known := receiverPorts[typ]
		if !known {
			add(portName(id), endpointPort(rc), corev1.ProtocolTCP)
			continue
		}
		protocols, _ := rc["protocols"].(map[string]any)
		for _, d := range defaults {
			if d.protocol == "" {
				port := endpointPort(rc)
				if port == 0 {
					port = d.port
				}
				add(portName(id), port, d.l4)
				continue
			}
			raw, ok := protocols[d.protocol]
			if !ok {
				continue
			}
			pc, _ := raw.(map[string]any)
			port := endpointPort(pc)
			if port == 0 {
				port = d.port
			}
			add(portName(id, strings.ReplaceAll(d.protocol, "_", "-")), port, d.l4)
		}
	}
	slices.SortFunc(ports, func(a, b corev1.ServicePort) int { return int(a.Port - b.Port) })
	uniquePortNames(ports)
	return ports
}

// ExporterPorts are the ports of the prometheus exporters used in a
// pipeline, the one exporter upstream knows to listen: its endpoint's port,
// 8888 by default, sorted by port.
func ExporterPorts(cfg map[string]any) []corev1.ServicePort {
	exporters, _ := cfg["exporters"].(map[string]any)
	used := usedComponents(cfg, "exporters")
	var ports []corev1.ServicePort
	for _, id := range slices.Sorted(maps.Keys(exporters)) {
		if typ, _, _ := strings.Cut(id, "/"); typ != "prometheus" || !used[id] {
			continue
		}
		ec, _ := exporters[id].(map[string]any)
		port := endpointPort(ec)
		if port == 0 {
			port = CollectorMonitoringPort
		}
		if slices.ContainsFunc(ports, func(p corev1.ServicePort) bool { return p.Port == port }) {
			continue
		}
		ports = append(ports, corev1.ServicePort{Name: componentPortName(id, port), Port: port, Protocol: corev1.ProtocolTCP, TargetPort: intOrStr(port)})
	}
	slices.SortFunc(ports, func(a, b corev1.ServicePort) int { return int(a.Port - b.Port) })
	return ports
}

// componentPortName is upstream's naming.PortName, which the pod webhook
// also follows: the component id with "/" and "_" made "-", or
// port-<number> when that is no valid IANA service name.
func componentPortName(id string, port int32) string {
	n := strings.NewReplacer("/", "-", "_", "-").Replace(id)
	if len(n) > 15 || !validIANAName.MatchString(n) {
		return fmt.Sprintf("port-%d", port)
	}
	return n
}

var validIANAName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// inferredPorts are the ports of the receivers and exporters in use, sorted
// by port, one per port number (a receiver's first), with unique names.
func inferredPorts(cfg map[string]any) []corev1.ServicePort {
	ports := ReceiverPorts(cfg)
	for _, p := range ExporterPorts(cfg) {
		if !slices.ContainsFunc(ports, func(r corev1.ServicePort) bool { return r.Port == p.Port }) {
			ports = append(ports, p)
		}
	}
	slices.SortStableFunc(ports, func(a, b corev1.ServicePort) int { return int(a.Port - b.Port) })
	uniquePortNames(ports)
	return ports
}

// metricsPortName is the container port of the collector's own metrics.
const metricsPortName = "metrics"

// uniquePortNames renames ports whose name is empty, taken by an earlier port
// (two long receiver names truncated alike) or reserved (the metrics port) to
// port-<number>, as the upstream operator does. ports are sorted by number, so
// the result is deterministic.
func uniquePortNames(ports []corev1.ServicePort) {
	used := map[string]bool{metricsPortName: true}
	for i := range ports {
		n := ports[i].Name
		if n == "" || used[n] {
			n = fmt.Sprintf("port-%d", ports[i].Port)
		}
		for k := 2; used[n]; k++ {
			n = fmt.Sprintf("port-%d-%d", ports[i].Port, k)
		}
		used[n] = true
		ports[i].Name = n
	}
}

// usedComponents returns the components of a kind (receivers, exporters)
// that appear in some pipeline.
func usedComponents(cfg map[string]any, kind string) map[string]bool {
	used := map[string]bool{}
	service, _ := cfg["service"].(map[string]any)
	pipelines, _ := service["pipelines"].(map[string]any)
	for _, p := range pipelines {
		pm, _ := p.(map[string]any)
		list, _ := pm[kind].([]any)
		for _, r := range list {
			if s, ok := r.(string); ok {
				used[s] = true
			}
		}
	}
	return used
}

// servicePort is a port of the collector Services and container: a Service
// port and, for the user's ports, the node port to bind.
type servicePort struct {
	corev1.ServicePort
	hostPort int32
}

// ErrInvalidPorts is a spec.ports list the builders cannot use.
var ErrInvalidPorts = errors.New("invalid ports")

// servicePorts merges the user's ports (first, as given) with the inferred
// ones, as upstream: an inferred port the user already declares (same number
// and protocol) is dropped; one whose name the user took is renamed
// port-<number>, and dropped if that name is taken too.
func servicePorts(user []v1beta1.PortsSpec, inferred []corev1.ServicePort) ([]servicePort, error) {
	out := make([]servicePort, 0, len(user)+len(inferred))
	names := map[string]bool{}
	numbers := map[string]bool{}
	key := func(p corev1.ServicePort) string {
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		return fmt.Sprintf("%d/%s", p.Port, proto)
	}
	for i, p := range user {
		if p.Name == metricsPortName && p.Port != CollectorMonitoringPort {
			return nil, fmt.Errorf("%w: ports[%d]: the name %s is the collector's own metrics port (%d)", ErrInvalidPorts, i, metricsPortName, CollectorMonitoringPort)
		}
		if names[p.Name] || numbers[key(p.ServicePort)] {
			return nil, fmt.Errorf("%w: ports[%d]: name %q or port %d declared twice", ErrInvalidPorts, i, p.Name, p.Port)
		}
		names[p.Name] = true
		numbers[key(p.ServicePort)] = true
		out = append(out, servicePort{ServicePort: *p.ServicePort.DeepCopy(), hostPort: p.HostPort})
	}
	for _, p := range inferred {
		if numbers[key(p)] {
			continue
		}
		if names[p.Name] {
			p.Name = fmt.Sprintf("port-%d", p.Port)
			if names[p.Name] {
				continue
			}
		}
		names[p.Name] = true
		numbers[key(p)] = true
		out = append(out, servicePort{ServicePort: p})
	}
	return out, nil
}

// servicePortsOnly are the Service ports of ports.
func servicePortsOnly(ports []servicePort) []corev1.ServicePort {
	out := make([]corev1.ServicePort, len(ports))
	for i, p := range ports {
		out[i] = p.ServicePort
	}
	return out
}

// containerPorts are the collector container's ports: its own metrics port,
// then ports.
func containerPorts(ports []servicePort) []corev1.ContainerPort {
	out := []corev1.ContainerPort{{Name: metricsPortName, ContainerPort: CollectorMonitoringPort, Protocol: corev1.ProtocolTCP}}
	for _, p := range ports {
		// The metrics port is declared once, whoever else listens on it.
		if p.Port == CollectorMonitoringPort {
			continue
		}
		target := p.Port
		if p.TargetPort.Type == intstr.Int && p.TargetPort.IntVal > 0 {
			target = p.TargetPort.IntVal
		}
		out = append(out, corev1.ContainerPort{Name: p.Name, ContainerPort: target, Protocol: p.Protocol, HostPort: p.hostPort})
	}
	return out
}

// healthCheckPort and healthCheckPath are the health_check extension's defaults.
const (
	healthCheckPort = 13133
	healthCheckPath = "/"
)

// healthCheckProbe is the HTTP probe of the first health_check extension the
// service enables, or nil when none is: the collector has no health
// endpoint to probe otherwise, as upstream.
func healthCheckProbe(cfg map[string]any) (*corev1.Probe, error) {
	service, _ := cfg["service"].(map[string]any)
	enabled, _ := service["extensions"].([]any)
	extensions, _ := cfg["extensions"].(map[string]any)
	for _, e := range enabled {
		id, _ := e.(string)
		if typ, _, _ := strings.Cut(id, "/"); typ != "health_check" {
			continue
		}
		ext, _ := extensions[id].(map[string]any)
		port := endpointPort(ext)
		if port == 0 {
			port = healthCheckPort
		}
		p := healthCheckPath
		if v, ok := ext["path"]; ok {
			s, ok := v.(string)
			if !ok || !strings.HasPrefix(s, "/") {
				return nil, fmt.Errorf("%w: extensions.%s.path must be a path starting with /", ErrInvalidConfig, id)
			}
			p = s
		}
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: p, Port: intstr.FromInt32(port)}}}, nil
	}
	return nil, nil
}

// tunedProbe is the health probe with the user's timings.
func tunedProbe(health *corev1.Probe, user *v1beta1.Probe) *corev1.Probe {
	p := health.DeepCopy()
	if user == nil {
		return p
	}
	p.InitialDelaySeconds = ptr.Deref(user.InitialDelaySeconds, 0)
	p.TimeoutSeconds = ptr.Deref(user.TimeoutSeconds, 0)
	p.PeriodSeconds = ptr.Deref(user.PeriodSeconds, 0)
	p.SuccessThreshold = ptr.Deref(user.SuccessThreshold, 0)
	p.FailureThreshold = ptr.Deref(user.FailureThreshold, 0)
	p.TerminationGracePeriodSeconds = user.TerminationGracePeriodSeconds
	return p
}
