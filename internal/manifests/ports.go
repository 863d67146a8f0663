package manifests

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests/container"
)

// metricsPortName is the container port of the collector's own metrics.
const metricsPortName = container.MetricsPortName

// ErrInvalidPorts is a spec.ports list the builders cannot use.
var ErrInvalidPorts = errors.New("invalid ports")

// servicePorts merges the user's ports (first, as given) with the inferred
// ones, as upstream: an inferred port the user already declares (same number
// and protocol) is dropped; one whose name the user took is renamed
// port-<number>, and dropped if that name is taken too.
func servicePorts(user []v1beta1.PortsSpec, cfg v1beta1.Config) ([]corev1.ServicePort, error) {
	inferred := container.ServicePorts(cfg)
	metrics := container.MetricsPort(cfg)
	out := make([]corev1.ServicePort, 0, len(user)+len(inferred))
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
		if p.Name == metricsPortName && p.Port != metrics {
			return nil, fmt.Errorf("%w: ports[%d]: the name %s is the collector's own metrics port (%d)", ErrInvalidPorts, i, metricsPortName, metrics)
		}
		if names[p.Name] || numbers[key(p.ServicePort)] {
			return nil, fmt.Errorf("%w: ports[%d]: name %q or port %d declared twice", ErrInvalidPorts, i, p.Name, p.Port)
		}
		names[p.Name] = true
		numbers[key(p.ServicePort)] = true
		out = append(out, *p.ServicePort.DeepCopy())
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
		out = append(out, p)
	}
	return out, nil
}
