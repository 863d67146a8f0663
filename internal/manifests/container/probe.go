package container

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/shardwise/shardwise/apis/v1beta1"
)

// ErrInvalidConfig is a collector configuration the container cannot be
// built from.
var ErrInvalidConfig = errors.New("invalid collector config")

// healthCheck is the first health_check extension the service starts, in
// the order of service.extensions, with its configuration.
func healthCheck(cfg v1beta1.Config) (string, map[string]any) {
	if cfg.Extensions == nil {
		return "", nil
	}
	for _, id := range cfg.Service.Extensions {
		if componentType(id) != "health_check" {
			continue
		}
		if raw, ok := cfg.Extensions.Object[id]; ok {
			return id, object(raw)
		}
	}
	return "", nil
}

// HealthProbe is upstream's probe of the health_check extension (liveness,
// readiness and startup alike), or nil when the service starts none: the
// collector has no health endpoint to probe otherwise.
func HealthProbe(cfg v1beta1.Config) (*corev1.Probe, error) {
	id, hc := healthCheck(cfg)
	if id == "" {
		return nil, nil
	}
	p := healthCheckPath
	if v, ok := hc["path"]; ok && v != nil {
		s, ok := v.(string)
		if !ok || !strings.HasPrefix(s, "/") {
			return nil, fmt.Errorf("%w: extensions.%s.path must be a path starting with /", ErrInvalidConfig, id)
		}
		p = s
	}
	port := endpointPort(hc)
	if port == 0 {
		port = HealthCheckPort
	}
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: p, Port: intstr.FromInt32(port)}}}, nil
}

// Tune is the health probe with the user's settings, as upstream's
// defaultProbeSettings: only the fields the user sets change, the others
// keep the probe's values (the API server's defaults when unset).
func Tune(health *corev1.Probe, user *v1beta1.Probe) *corev1.Probe {
	p := health.DeepCopy()
	if p == nil || user == nil {
		return p
	}
	for _, f := range [...]struct {
		dst *int32
		src *int32
	}{
		{&p.InitialDelaySeconds, user.InitialDelaySeconds},
		{&p.TimeoutSeconds, user.TimeoutSeconds},
		{&p.PeriodSeconds, user.PeriodSeconds},
		{&p.SuccessThreshold, user.SuccessThreshold},
		{&p.FailureThreshold, user.FailureThreshold},
	} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	if user.TerminationGracePeriodSeconds != nil {
		p.TerminationGracePeriodSeconds = ptr.To(*user.TerminationGracePeriodSeconds)
	}
	return p
}

// probes sets the container's probes from the health_check extension:
// liveness and readiness always, startup when the spec tunes one or, for a
// native sidecar, the readiness probe (the kubelet starts the application
// containers once the sidecar has started), as upstream.
func probes(ctr *corev1.Container, spec *v1beta1.OpenTelemetryCollectorSpec, native bool) error {
	health, err := HealthProbe(spec.Config)
	if err != nil || health == nil {
		return err
	}
	ctr.LivenessProbe = Tune(health, spec.LivenessProbe)
	ctr.ReadinessProbe = Tune(health, spec.ReadinessProbe)
	switch {
	case spec.StartupProbe != nil:
		ctr.StartupProbe = Tune(health, spec.StartupProbe)
	case native:
		ctr.StartupProbe = ctr.ReadinessProbe.DeepCopy()
	}
	return nil
}
