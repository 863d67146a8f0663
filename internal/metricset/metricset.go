// Package metricset declares a component's metrics one line each and
// registers them as a set: every metric of the set is registered or, when
// one cannot be, none of them stays registered.
//
//	s := metricset.New(reg)
//	m := &metrics{
//		moved: s.Counter("shardwise_allocator_rebalance_moved_targets_total", "Targets that changed collector in rebalances."),
//		loads: s.GaugeVec("shardwise_allocator_targets", "Targets assigned to each collector.", "collector"),
//	}
//	if err := s.Err(); err != nil { ... }
//
// A linter reading the source sees only the calls here, so names and help
// are checked at test time instead: a registerer that also implements
// Declarer (metricsettest.Registry) is told of every metric declared, label
// vectors included, and lints them with promlint.
package metricset

import (
	"errors"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Declarer is implemented by a registerer that wants to know each metric a
// Set declares on it, with its type and label names, whether or not it ever
// has a value (a label vector without children gathers nothing).
type Declarer interface {
	Declare(*dto.MetricFamily)
}

// Set registers the metrics made through it on one registerer and keeps the
// first error. It is not safe for concurrent use: a set is made, filled and
// checked in one constructor.
type Set struct {
	*state
	shared bool
}

type state struct {
	reg  prometheus.Registerer
	made []prometheus.Collector
	err  error
}

// New returns a set registering on reg (nil: a private registry).
func New(reg prometheus.Registerer) *Set {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	return &Set{state: &state{reg: reg}}
}

// Shared returns a view of s for metrics that more than one component
// reports into, registered once per registry: the first component to
// declare one registers it, the others get the one registered before
// (declared with the same type, help and labels). A shared metric stays
// registered when the set fails, since another component may hold it.
func (s *Set) Shared() *Set {
	return &Set{state: s.state, shared: true}
}

// Err returns the first registration error of the set, after unregistering
// every metric the set registered, so that the registry is left as it was;
// nil when all of them are registered.
func (s *Set) Err() error {
	if s.err == nil {
		return nil
	}
	for _, c := range slices.Backward(s.made) {
		s.reg.Unregister(c)
	}
	s.made = nil
	return s.err
}

// Gauge declares a gauge.
func (s *Set) Gauge(name, help string) prometheus.Gauge {
	return add(s, prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help}), decl{name, help, dto.MetricType_GAUGE, nil})
}

// GaugeVec declares a gauge with the given labels.
func (s *Set) GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return add(s, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels), decl{name, help, dto.MetricType_GAUGE, labels})
}

// Counter declares a counter.
func (s *Set) Counter(name, help string) prometheus.Counter {
	return add(s, prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help}), decl{name, help, dto.MetricType_COUNTER, nil})
}

// CounterVec declares a counter with the given labels.
func (s *Set) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return add(s, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels), decl{name, help, dto.MetricType_COUNTER, labels})
}

// Histogram declares a histogram with the given buckets.
func (s *Set) Histogram(name, help string, buckets []float64) prometheus.Histogram {
	return add(s, prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}), decl{name, help, dto.MetricType_HISTOGRAM, nil})
}

// HistogramVec declares a histogram with the given buckets and labels.
func (s *Set) HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return add(s, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels), decl{name, help, dto.MetricType_HISTOGRAM, labels})
}

// add registers c unless the set has failed already, and returns c (or, in
// a shared view, the equal collector registered before) in either case, so
// that a failed set still hands out usable metrics.
func add[C prometheus.Collector](s *Set, c C, d decl) C {
	if s.err != nil {
		return c
	}
	err := s.reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	switch {
	case err == nil && !s.shared:
		s.made = append(s.made, c)
	case err == nil:
	case s.shared && errors.As(err, &are):
		existing, ok := are.ExistingCollector.(C)
		if !ok {
			s.err = err
			return c
		}
		c = existing
	default:
		s.err = err
		return c
	}
	if r, ok := s.reg.(Declarer); ok {
		r.Declare(d.family())
	}
	return c
}

// decl is what a Set was asked to declare.
type decl struct {
	name, help string
	typ        dto.MetricType
	labels     []string
}

// family is the skeleton of the declared metric family for a Declarer: its
// name, help and type, and one metric carrying each label name.
func (d decl) family() *dto.MetricFamily {
	m := &dto.Metric{}
	for _, l := range d.labels {
		m.Label = append(m.Label, &dto.LabelPair{Name: new(l), Value: new("value")})
	}
	mf := &dto.MetricFamily{Name: new(d.name), Type: new(d.typ), Metric: []*dto.Metric{m}}
	if d.help != "" {
		mf.Help = new(d.help) // as an exposition without # HELP
	}
	return mf
}
