package webhook

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardwise/shardwise/internal/metricset"
)

// Metrics are the pod webhook's metrics.
type Metrics struct {
	injections            *prometheus.CounterVec
	crossNamespaceRefused *prometheus.CounterVec
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	s := metricset.New(reg)
	m := &Metrics{
		injections: s.CounterVec("shardwise_instrumentation_injections_total",
			"Auto-instrumentation requests by language and result (injected, already-injected, disabled, unresolved, invalid, unsupported).",
			"language", "result"),
		crossNamespaceRefused: s.CounterVec("shardwise_instrumentation_cross_namespace_refused_total",
			"Auto-instrumentation requests naming another namespace's Instrumentation that does not allow the pod's namespace, by language (counted as unresolved too).",
			"language"),
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("register instrumentation metrics: %w", err)
	}
	return m, nil
}

// SidecarMetrics are the sidecar mutator's metrics.
type SidecarMetrics struct {
	injections            *prometheus.CounterVec
	crossNamespaceRefused prometheus.Counter
}

// NewSidecarMetrics registers the metrics with reg.
func NewSidecarMetrics(reg prometheus.Registerer) (*SidecarMetrics, error) {
	s := metricset.New(reg)
	m := &SidecarMetrics{
		injections: s.CounterVec("shardwise_sidecar_injections_total",
			"Pods asking for a collector sidecar (sidecar.opentelemetry.io/inject), by result (injected, already-injected, name-conflict, pod-conflict, opted-out, removed, not-found, ambiguous, not-sidecar, failed).",
			"result"),
		crossNamespaceRefused: s.Counter("shardwise_sidecar_cross_namespace_refused_total",
			"Sidecar requests naming another namespace's collector that does not allow the pod's namespace (counted among the failed injections too)."),
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("register sidecar metrics: %w", err)
	}
	return m, nil
}
