package container

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shardwise/shardwise/apis/v1beta1"
)

// listener is a listening protocol of a component type with its default
// port (upstream's internal/components parsers).
type listener struct {
	protocol string // key under protocols:, or "" for the component's own endpoint
	port     int32
	l4       corev1.Protocol
}

var tcp, udp = corev1.ProtocolTCP, corev1.ProtocolUDP

// receiverListeners are the receivers with default ports. A receiver not
// listed listens only where its endpoint says; scrapers listen nowhere.
var receiverListeners = map[string][]listener{
	"otlp":          {{"grpc", 4317, tcp}, {"http", 4318, tcp}},
	"jaeger":        {{"grpc", 14250, tcp}, {"thrift_http", 14268, tcp}, {"thrift_compact", 6831, udp}, {"thrift_binary", 6832, udp}},
	"skywalking":    {{"grpc", 11800, tcp}, {"http", 12800, tcp}},
	"loki":          {{"grpc", 9095, tcp}, {"http", 3100, tcp}},
	"zipkin":        {{"", 9411, tcp}},
	"opencensus":    {{"", 55678, tcp}},
	"awsxray":       {{"", 2000, udp}},
	"carbon":        {{"", 2003, tcp}},
	"collectd":      {{"", 8081, tcp}},
	"fluentforward": {{"", 8006, tcp}},
	"influxdb":      {{"", 8086, tcp}},
	"sapm":          {{"", 7276, tcp}},
	"signalfx":      {{"", 9943, tcp}},
	"splunk_hec":    {{"", 8088, tcp}},
	"statsd":        {{"", 8125, udp}},
	"wavefront":     {{"", 2003, tcp}},
}

// scrapers are receivers that listen on nothing whatever their endpoint
// says (a redis or httpcheck endpoint is the server they scrape).
var scrapers = map[string]bool{
	"prometheus": true, "prometheus_simple": true, "kubeletstats": true, "k8s_cluster": true, "k8s_events": true,
	"k8sobjects": true, "hostmetrics": true, "filelog": true, "journald": true, "receiver_creator": true,
	"httpcheck": true, "redis": true, "mysql": true, "postgresql": true, "mongodb": true, "elasticsearch": true,
}

// ListeningReceivers are the receiver types with default ports, sorted: the
// table the modes share.
func ListeningReceivers() []string {
	out := make([]string, 0, len(receiverListeners))
	for t := range receiverListeners {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Protocols are the protocols (keys under protocols:) of a receiver type
// with default ports, none for a single-endpoint or unknown receiver.
func Protocols(typ string) []string {
	var out []string
	for _, l := range receiverListeners[typ] {
		if l.protocol != "" {
			out = append(out, l.protocol)
		}
	}
	return out
}

// Ports the collector serves by default.
const (
	// MetricsPortName names the port of the collector's own metrics.
	MetricsPortName = "metrics"
	// DefaultMetricsPort is that port unless service.telemetry says otherwise.
	DefaultMetricsPort = 8888
	// HealthCheckPort and healthCheckPath are the health_check extension's
	// defaults.
	HealthCheckPort = 13133
	healthCheckPath = "/"
	maxPortName     = 15
)

var validPortName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// PortName is upstream's naming.PortName: the component id with "/" and "_"
// made "-", or port-<number> when that is no valid IANA service name (at
// most 15 characters, lower-case alphanumerics and "-", a letter among
// them).
func PortName(id string, port int32) string {
	n := strings.NewReplacer("/", "-", "_", "-").Replace(id)
	if len(n) > maxPortName || !validPortName.MatchString(n) || !strings.ContainsAny(n, "abcdefghijklmnopqrstuvwxyz") {
		return fmt.Sprintf("port-%d", port)
	}
	return n
}

// componentType is the type part of a component id "type[/name]".
func componentType(id string) string {
	t, _, _ := strings.Cut(id, "/")
	return t
}

// enabled returns the components of a kind ("receivers", "exporters") that
// some pipeline uses, sorted: the collector starts no other.
func enabled(cfg v1beta1.Config, kind string) []string {
	var out []string
	for _, p := range cfg.Service.Pipelines {
		if p == nil {
			continue
		}
		list := p.Receivers
		if kind == "exporters" {
			list = p.Exporters
		}
		for _, id := range list {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}

// usesReceiver reports whether a pipeline uses a receiver of type typ.
func usesReceiver(cfg v1beta1.Config, typ string) bool {
	return slices.ContainsFunc(enabled(cfg, "receivers"), func(id string) bool { return componentType(id) == typ })
}

func object(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// endpointPort is the port of a host:port endpoint, or 0.
func endpointPort(cfg map[string]any) int32 {
	ep, _ := cfg["endpoint"].(string)
	if ep == "" {
		return 0
	}
	_, p, err := net.SplitHostPort(ep)
	if err != nil {
		return 0
	}
	return portNumber(p)
}

func portNumber(s string) int32 {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n <= 0 || n > 65535 {
		return 0
	}
	return int32(n)
}

// ports collects listening ports: one per number and protocol, the first
// wins; a name already taken becomes port-<number>, and the port is dropped
// if that is taken too. The metrics port name is reserved.
type ports []corev1.ServicePort

func (ps *ports) add(name string, port int32, l4 corev1.Protocol) {
	if port == 0 || slices.ContainsFunc(*ps, func(p corev1.ServicePort) bool { return p.Port == port && p.Protocol == l4 }) {
		return
	}
	taken := func(n string) bool {
		return n == MetricsPortName || slices.ContainsFunc(*ps, func(p corev1.ServicePort) bool { return p.Name == n })
	}
	if taken(name) {
		name = fmt.Sprintf("port-%d", port)
		if taken(name) {
			return
		}
	}
	*ps = append(*ps, corev1.ServicePort{Name: name, Port: port, Protocol: l4, TargetPort: intstr.FromInt32(port)})
}

// receiverPorts adds the ports of the enabled receivers, in id order.
func (ps *ports) receivers(cfg v1beta1.Config) {
	for _, id := range enabled(cfg, "receivers") {
		typ := componentType(id)
		rc := object(cfg.Receivers.Object[id])
		listeners, known := receiverListeners[typ]
		switch {
		case scrapers[typ]:
		case !known:
			port := endpointPort(rc)
			ps.add(PortName(id, port), port, tcp)
		default:
			protocols := object(rc["protocols"])
			for _, l := range listeners {
				name, pc := id, rc
				if l.protocol != "" {
					raw, ok := protocols[l.protocol]
					if !ok {
						continue
					}
					name, pc = id+"-"+l.protocol, object(raw)
				}
				port := endpointPort(pc)
				if port == 0 {
					port = l.port
				}
				ps.add(PortName(name, port), port, l.l4)
			}
		}
	}
}

// exporters adds the ports of the enabled prometheus exporters, the one
// exporter upstream knows to listen: its endpoint's port, 8888 by default.
func (ps *ports) exporters(cfg v1beta1.Config) {
	for _, id := range enabled(cfg, "exporters") {
		if componentType(id) != "prometheus" {
			continue
		}
		port := endpointPort(object(cfg.Exporters.Object[id]))
		if port == 0 {
			port = DefaultMetricsPort
		}
		ps.add(PortName(id, port), port, tcp)
	}
}

func byNumber(a, b corev1.ServicePort) int {
	if a.Port != b.Port {
		return int(a.Port - b.Port)
	}
	return strings.Compare(string(a.Protocol), string(b.Protocol))
}

// sorted collects the ports of the kinds of components, sorted by number.
func sorted(cfg v1beta1.Config, kinds ...func(*ports, v1beta1.Config)) []corev1.ServicePort {
	var ps ports
	for _, add := range kinds {
		add(&ps, cfg)
	}
	slices.SortFunc(ps, byNumber)
	return ps
}

// ExporterPorts are the ports of the prometheus exporters used in a
// pipeline, sorted by number.
func ExporterPorts(cfg v1beta1.Config) []corev1.ServicePort {
	return sorted(cfg, (*ports).exporters)
}

// ServicePorts are the ports of the receivers, then the exporters, in use:
// one per number and protocol (a receiver's first), unique names, sorted by
// number. They are the collector Services' inferred ports.
func ServicePorts(cfg v1beta1.Config) []corev1.ServicePort {
	return sorted(cfg, (*ports).receivers, (*ports).exporters)
}

// listening are ServicePorts and the health_check extension's port: every
// port the configuration makes the collector listen on besides its metrics.
func listening(cfg v1beta1.Config) []corev1.ServicePort {
	var ps ports
	ps.receivers(cfg)
	ps.exporters(cfg)
	if id, hc := healthCheck(cfg); id != "" {
		port := endpointPort(hc)
		if port == 0 {
			port = HealthCheckPort
		}
		ps.add(PortName(id, port), port, tcp)
	}
	return ps
}

// MetricsPort is the port of the collector's own metrics
// (service.telemetry.metrics: address, or a pull reader's prometheus
// exporter), 8888 by default.
func MetricsPort(cfg v1beta1.Config) int32 {
	if cfg.Service.Telemetry == nil {
		return DefaultMetricsPort
	}
	m := object(cfg.Service.Telemetry.Object["metrics"])
	readers, _ := m["readers"].([]any)
	if addr, _ := m["address"].(string); addr != "" && len(readers) == 0 {
		if _, p, err := net.SplitHostPort(addr); err == nil {
			if n := portNumber(p); n != 0 {
				return n
			}
		}
		return DefaultMetricsPort
	}
	for _, r := range readers {
		prom := object(object(object(object(r)["pull"])["exporter"])["prometheus"])
		if prom == nil {
			continue
		}
		if n := portNumber(fmt.Sprint(prom["port"])); n != 0 {
			return n
		}
		return DefaultMetricsPort
	}
	return DefaultMetricsPort
}

type portKey struct {
	port  int32
	proto corev1.Protocol
}

func l4(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return tcp
	}
	return p
}

// Ports are the container's ports, sorted by name as upstream's
// getContainerPorts: the metrics port, the user's (spec.ports; the
// container listens on a numeric targetPort when one is set), then the
// inferred ones. A user port whose name an earlier one took is renamed
// port-<number>, and dropped if that is taken too; an inferred port whose
// number and protocol the user or the metrics port declares is dropped, one
// whose name is taken is renamed the same way.
func Ports(cfg v1beta1.Config, user []v1beta1.PortsSpec) []corev1.ContainerPort {
	metrics := MetricsPort(cfg)
	out := []corev1.ContainerPort{{Name: MetricsPortName, ContainerPort: metrics, Protocol: tcp}}
	names := map[string]bool{MetricsPortName: true}
	numbers := map[portKey]bool{{metrics, tcp}: true}
	take := func(name string, port int32) string {
		if names[name] {
			name = fmt.Sprintf("port-%d", port)
			if names[name] {
				return ""
			}
		}
		names[name] = true
		return name
	}
	for _, p := range user {
		target := p.Port
		if p.TargetPort.Type == intstr.Int && p.TargetPort.IntVal > 0 {
			target = p.TargetPort.IntVal
		}
		key := portKey{target, l4(p.Protocol)}
		if numbers[key] {
			continue
		}
		name := take(p.Name, p.Port)
		if name == "" {
			continue
		}
		numbers[key] = true
		out = append(out, corev1.ContainerPort{Name: name, ContainerPort: target, Protocol: key.proto, HostPort: p.HostPort})
	}
	for _, p := range listening(cfg) {
		if numbers[portKey{p.Port, p.Protocol}] {
			continue
		}
		if name := take(p.Name, p.Port); name != "" {
			out = append(out, corev1.ContainerPort{Name: name, ContainerPort: p.Port, Protocol: p.Protocol})
		}
	}
	slices.SortStableFunc(out, func(a, b corev1.ContainerPort) int { return strings.Compare(a.Name, b.Name) })
	return out
}
