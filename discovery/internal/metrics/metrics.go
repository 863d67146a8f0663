// Package metrics defines the metrics that more than one discovery package
// reports into. Each is registered once per registry: the first package to
// ask registers it, the others get the registered one.
package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// SourceFile and SourceOperator are the source label values of ConfigErrors.
const (
	SourceFile     = "file"
	SourceOperator = "prometheus-operator"
)

// ConfigErrors is shardwise_allocator_discovery_config_errors_total{source}:
// the Manager counts rejected file job sets, the operator watcher failed
// generations.
func ConfigErrors(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	return register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shardwise_allocator_discovery_config_errors_total",
		Help: "Scrape configuration sets rejected, by source; the last good set stays in use.",
	}, []string{"source"}))
}

// InformerSynced is shardwise_allocator_informer_synced{resource}, set by the
// operator watcher and the collector watcher.
func InformerSynced(reg prometheus.Registerer) (*prometheus.GaugeVec, error) {
	return register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "shardwise_allocator_informer_synced",
		Help: "1 when the allocator has listed the Kubernetes resource (collector pods, namespaces, each prometheus-operator kind); 0 when it cannot (RBAC forbids it, the API server does not answer).",
	}, []string{"resource"}))
}

// register registers c on reg, or returns the equal collector registered
// there before.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	var zero C
	return zero, err
}
