package sidecar

import (
	"encoding/json"
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

// scrapers are receivers that listen on nothing whatever their endpoint says.
var scrapers = map[string]bool{
	"prometheus": true, "prometheus_simple": true, "kubeletstats": true, "k8s_cluster": true, "k8s_events": true,
	"k8sobjects": true, "hostmetrics": true, "filelog": true, "journald": true, "receiver_creator": true,
	"httpcheck": true, "redis": true, "mysql": true, "postgresql": true, "mongodb": true, "elasticsearch": true,
}

const (
	metricsPortName    = "metrics"
	defaultMetricsPort = 8888
	healthCheckPort    = 13133
	maxPortNameLength  = 15
)

var validPortName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// portName is upstream's naming.PortName: the component id with "/" and "_"
// made "-", or port-<number> when that is no valid IANA service name.
func portName(id string, port int32) string {
	n := strings.NewReplacer("/", "-", "_", "-").Replace(id)
	if len(n) > maxPortNameLength || !validPortName.MatchString(n) || !strings.ContainsAny(n, "abcdefghijklmnopqrstuvwxyz") {
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

// containerPorts are the user's ports and those inferred from the
// configuration, sorted by name, as upstream's getContainerPorts: an
// inferred port whose number and protocol the user declares is dropped, one
// whose name the user took is renamed port-<number>, and dropped if that is
// taken too; a user port whose name repeats an earlier one is renamed the
// same way.
func containerPorts(cfg v1beta1.Config, user []v1beta1.PortsSpec) []corev1.ContainerPort {
	inferred := inferredPorts(cfg)
	if len(user) == 0 {
		return inferred
	}
	type key struct {
		port  int32
		proto corev1.Protocol
	}
	l4 := func(p corev1.Protocol) corev1.Protocol {
		if p == "" {
			return tcp
		}
		return p
	}
	names, numbers := map[string]bool{}, map[key]bool{}
	for _, p := range user {
		names[p.Name] = true
		numbers[key{p.Port, l4(p.Protocol)}] = true
	}
	seen := map[string]bool{}
	var out []corev1.ContainerPort
	for _, p := range user {
		name := p.Name
		if seen[name] {
			name = fmt.Sprintf("port-%d", p.Port)
			if seen[name] {
				continue
			}
		}
		seen[name] = true
		out = append(out, corev1.ContainerPort{Name: name, ContainerPort: p.Port, Protocol: l4(p.Protocol), HostPort: p.HostPort})
	}
	for _, p := range inferred {
		if numbers[key{p.ContainerPort, p.Protocol}] {
			continue
		}
		// seen: a user port renamed port-<number> takes that name too.
		if names[p.Name] || seen[p.Name] {
			p.Name = fmt.Sprintf("port-%d", p.ContainerPort)
			if names[p.Name] || seen[p.Name] {
				continue
			}
		}
		out = append(out, p)
	}
	slices.SortStableFunc(out, func(a, b corev1.ContainerPort) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// inferredPorts are the ports of the enabled receivers, a prometheus
// exporter, the health_check extension and the collector's metrics port,
// sorted by name, as upstream's getConfigContainerPorts.
func inferredPorts(cfg v1beta1.Config) []corev1.ContainerPort {
	metrics := metricsPort(cfg)
	ports := []corev1.ContainerPort{{Name: metricsPortName, ContainerPort: metrics, Protocol: tcp}}
	add := func(name string, port int32, l4 corev1.Protocol) {
		if port == 0 || slices.ContainsFunc(ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == port && p.Protocol == l4 }) {
			return
		}
		if slices.ContainsFunc(ports, func(p corev1.ContainerPort) bool { return p.Name == name }) {
			name = fmt.Sprintf("port-%d", port)
			if slices.ContainsFunc(ports, func(p corev1.ContainerPort) bool { return p.Name == name }) {
				return
			}
		}
		ports = append(ports, corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: l4})
	}
	for _, id := range enabled(cfg, "receivers") {
		typ := componentType(id)
		rc := object(cfg.Receivers.Object[id])
		listeners, known := receiverListeners[typ]
		switch {
		case scrapers[typ]:
		case !known:
			port := endpointPort(rc)
			add(portName(id, port), port, tcp)
		default:
			protocols := object(rc["protocols"])
			for _, l := range listeners {
				if l.protocol == "" {
					port := endpointPort(rc)
					if port == 0 {
						port = l.port
					}
					add(portName(id, port), port, l.l4)
					continue
				}
				pc, ok := protocols[l.protocol]
				if !ok {
					continue
				}
				port := endpointPort(object(pc))
				if port == 0 {
					port = l.port
				}
				add(portName(id+"-"+l.protocol, port), port, l.l4)
			}
		}
	}
	for _, id := range enabled(cfg, "exporters") {
		if componentType(id) != "prometheus" {
			continue
		}
		port := endpointPort(object(cfg.Exporters.Object[id]))
		if port == 0 {
			port = defaultMetricsPort
		}
		add(portName(id, port), port, tcp)
	}
	if id, hc := healthCheck(cfg); id != "" {
		port := endpointPort(hc)
		if port == 0 {
			port = healthCheckPort
		}
		add(portName(id, port), port, tcp)
	}
	slices.SortFunc(ports, func(a, b corev1.ContainerPort) int { return strings.Compare(a.Name, b.Name) })
	return ports
}

// metricsPort is the port of the collector's own metrics
// (service.telemetry.metrics: address, or a pull reader's prometheus
// exporter), 8888 by default.
func metricsPort(cfg v1beta1.Config) int32 {
	if cfg.Service.Telemetry == nil {
		return defaultMetricsPort
	}
	m := object(cfg.Service.Telemetry.Object["metrics"])
	readers, _ := m["readers"].([]any)
	if addr, _ := m["address"].(string); addr != "" && len(readers) == 0 {
		if _, p, err := net.SplitHostPort(addr); err == nil {
			if n := portNumber(p); n != 0 {
				return n
			}
		}
		return defaultMetricsPort
	}
	for _, r := range readers {
		prom := object(object(object(object(r)["pull"])["exporter"])["prometheus"])
		if prom == nil {
			continue
		}
		switch p := prom["port"].(type) {
		case json.Number:
			if n := portNumber(p.String()); n != 0 {
				return n
			}
		case float64:
			if n := portNumber(strconv.FormatFloat(p, 'f', -1, 64)); n != 0 {
				return n
			}
		}
		return defaultMetricsPort
	}
	return defaultMetricsPort
}

// healthCheck is the first health_check extension the service starts, with
// its configuration.
func healthCheck(cfg v1beta1.Config) (string, map[string]any) {
	if cfg.Extensions == nil {
		return "", nil
	}
	ids := slices.Clone(cfg.Service.Extensions)
	slices.Sort(ids)
	for _, id := range ids {
		if componentType(id) != "health_check" {
			continue
		}
		if raw, ok := cfg.Extensions.Object[id]; ok {
			return id, object(raw)
		}
	}
	return "", nil
}

// healthProbe is upstream's probe of the health_check extension (liveness,
// readiness and startup alike), or nil without one.
func healthProbe(cfg v1beta1.Config) *corev1.Probe {
	id, hc := healthCheck(cfg)
	if id == "" {
		return nil
	}
	path, _ := hc["path"].(string)
	if path == "" {
		path = "/"
	}
	port := endpointPort(hc)
	if port == 0 {
		port = healthCheckPort
	}
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port)}}}
}
