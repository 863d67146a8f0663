// Package metricsettest lints the metrics a package declares through
// metricset, as promlint would lint them on a /metrics page, but before any
// of them has a value.
package metricsettest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/shardwise/shardwise/internal/metricset"
)

// Registry is a prometheus.Registry that remembers every metric a
// metricset.Set declared on it.
type Registry struct {
	*prometheus.Registry

	mu       sync.Mutex
	declared []*dto.MetricFamily
}

var _ metricset.Declarer = (*Registry)(nil)

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{Registry: prometheus.NewRegistry()}
}

// Declare records a declared metric family.
func (r *Registry) Declare(mf *dto.MetricFamily) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.declared = append(r.declared, mf)
}

// Declared returns the names of the metrics declared so far, in order.
func (r *Registry) Declared() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.declared))
	for _, mf := range r.declared {
		names = append(names, mf.GetName())
	}
	return names
}

// Lint returns promlint's problems with the declared metrics (names, units,
// help text, counters' _total), one error each; nil when there are none.
func (r *Registry) Lint() error {
	r.mu.Lock()
	mfs := append([]*dto.MetricFamily(nil), r.declared...)
	r.mu.Unlock()
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		return fmt.Errorf("lint: %w", err)
	}
	errs := make([]error, 0, len(problems))
	for _, p := range problems {
		errs = append(errs, fmt.Errorf("%s: %s", p.Metric, p.Text))
	}
	return errors.Join(errs...)
}

// Require declares metrics through each of declare on one Registry, as a
// program that registers them all on one registry does, and fails t unless
// every declaration succeeds, they number want, and promlint finds nothing.
// It returns the Registry for further checks.
func Require(t testing.TB, want int, declare ...func(prometheus.Registerer) error) *Registry {
	t.Helper()
	reg := NewRegistry()
	for _, d := range declare {
		if err := d(reg); err != nil {
			t.Fatalf("declare metrics: %v", err)
		}
	}
	if got := reg.Declared(); len(got) != want {
		t.Fatalf("declared %d metrics, want %d: %v", len(got), want, got)
	}
	if err := reg.Lint(); err != nil {
		t.Fatalf("promlint:\n%v", err)
	}
	return reg
}

// Of adapts a metrics constructor to Require.
func Of[M any](newMetrics func(prometheus.Registerer) (M, error)) func(prometheus.Registerer) error {
	return func(reg prometheus.Registerer) error {
		_, err := newMetrics(reg)
		return err
	}
}
