package manifests

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
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
	used := usedReceivers(cfg)
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

// usedReceivers returns the receivers that appear in some pipeline: the
// collector starts no other.
func usedReceivers(cfg map[string]any) map[string]bool {
	used := map[string]bool{}
	service, _ := cfg["service"].(map[string]any)
	pipelines, _ := service["pipelines"].(map[string]any)
	for _, p := range pipelines {
		pm, _ := p.(map[string]any)
		list, _ := pm["receivers"].([]any)
		for _, r := range list {
			if s, ok := r.(string); ok {
				used[s] = true
			}
		}
	}
	return used
}
