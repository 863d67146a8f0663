// Package upstreammetrics serves the allocator's metrics under the names and
// label names the OpenTelemetry Operator's target allocator (v0.158) exports
// them, besides shardwise's own, so dashboards and alerts written for it keep
// working after a switch.
//
// The upstream series are derived, at every scrape, from shardwise's own
// metrics in the allocator's registry: they cannot disagree with them, and
// nothing in the allocator records anything twice. What each one is made of
// is the table in Mappings (and docs/migration.md).
package upstreammetrics

import (
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Mapping is one upstream metric and the shardwise metric it is derived
// from.
type Mapping struct {
	// Upstream is the upstream metric's name.
	Upstream string
	// From is the shardwise (or Prometheus service discovery) metric.
	From string
	// Labels renames From's labels; a label not listed is summed away.
	Labels map[string]string
	// Const are labels upstream has that From does not, with their values
	// (the strategy, for one).
	Const map[string]string
	help  string
}

// eventsHelp is the help of opentelemetry_allocator_events_total, which
// two mappings make.
const eventsHelp = "Number of events in the channel."

// Mappings are the upstream metrics served, given the allocation strategy's
// name, which upstream puts in a label.
func Mappings(strategy string) []Mapping {
	s := map[string]string{"strategy": strategy}
	return []Mapping{
		{Upstream: "opentelemetry_allocator_targets_per_collector", From: "shardwise_allocator_targets", Labels: map[string]string{"collector": "collector_name"}, Const: s, help: "The number of targets for each collector."},
		{Upstream: "opentelemetry_allocator_collectors_allocatable", From: "shardwise_allocator_collectors", Const: s, help: "Number of collectors the allocator is able to allocate to."},
		{Upstream: "opentelemetry_allocator_targets_unassigned", From: "shardwise_allocator_targets_unassigned", help: "Number of targets that could not be assigned due to missing node label."},
		{Upstream: "opentelemetry_allocator_collectors_discovered", From: "shardwise_allocator_discovered_collectors", help: "Number of collectors discovered."},
		{Upstream: "opentelemetry_allocator_targets_remaining", From: "shardwise_allocator_discovery_targets", help: "Number of targets kept after filtering."},
		{Upstream: "opentelemetry_allocator_targets", From: "prometheus_sd_discovered_targets", Labels: map[string]string{"config": "job_name"}, help: "Number of targets discovered."},
		// One rebalance serves both of upstream's methods.
		{Upstream: "opentelemetry_allocator_time_to_allocate", From: "shardwise_allocator_allocation_duration_seconds", Const: map[string]string{"method": "SetTargets", "strategy": strategy}, help: "The time it takes to allocate"},
		{Upstream: "opentelemetry_allocator_process_targets_duration_seconds", From: "shardwise_allocator_discovery_pass_duration_seconds", help: "Duration of processing targets."},
		{Upstream: "opentelemetry_allocator_http_duration_seconds", From: "shardwise_allocator_http_request_duration_seconds", Labels: map[string]string{"route": "path"}, help: "Duration of received HTTP requests."},
		// Upstream counts the events of its watchers' channel, each a
		// config reload: the config file's, and prometheus-operator's.
		{Upstream: "opentelemetry_allocator_events_total", From: "shardwise_allocator_config_reloads_total", Const: map[string]string{"source": "EventSourceConfigMap"}, help: eventsHelp},
		{Upstream: "opentelemetry_allocator_events_total", From: "shardwise_allocator_prometheus_cr_generations_total", Const: map[string]string{"source": "EventSourcePrometheusCR"}, help: eventsHelp},
	}
}

// Collector is a prometheus.Collector of the upstream series, derived from
// what source gathers. Register it on a registry other than source (a
// Collector that gathered its own registry would call itself) and serve
// both, with prometheus.Gatherers.
type Collector struct {
	source   prometheus.Gatherer
	strategy func() string
}

// New returns the Collector of the upstream series of source, for an
// allocator running the strategy that strategy names at the time of each
// scrape (a config reload may change it).
func New(source prometheus.Gatherer, strategy func() string) *Collector {
	return &Collector{source: source, strategy: strategy}
}

var _ prometheus.Collector = (*Collector)(nil)

// Describe sends nothing: the series depend on what source holds at the
// time, so the Collector is unchecked.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect derives the upstream series from a gathering of source. A failed
// gathering yields what could be gathered; a source metric that is absent
// yields no upstream series.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	families, _ := c.source.Gather()
	byName := make(map[string]*dto.MetricFamily, len(families))
	for _, f := range families {
		byName[f.GetName()] = f
	}
	for _, m := range Mappings(c.strategy()) {
		f, ok := byName[m.From]
		if !ok {
			continue
		}
		m.collect(f, ch)
	}
}

// series is one upstream series being summed up from source series.
type series struct {
	labels  []string // values, in the order of names
	value   float64
	count   uint64
	sum     float64
	buckets map[float64]uint64
}

func (m Mapping) collect(f *dto.MetricFamily, ch chan<- prometheus.Metric) {
	switch f.GetType() {
	case dto.MetricType_GAUGE, dto.MetricType_COUNTER, dto.MetricType_HISTOGRAM:
	default:
		return // no mapping reads another type
	}
	names := append(slices.Sorted(maps.Values(m.Labels)), slices.Sorted(maps.Keys(m.Const))...)
	desc := prometheus.NewDesc(m.Upstream, m.help, names, nil)
	sums := map[string]*series{}
	var order []string
	for _, metric := range f.GetMetric() {
		values := make([]string, 0, len(names))
		have := map[string]string{}
		for _, lp := range metric.GetLabel() {
			if to, ok := m.Labels[lp.GetName()]; ok {
				have[to] = lp.GetValue()
			}
		}
		for _, n := range names {
			if v, ok := m.Const[n]; ok {
				values = append(values, v)
			} else {
				values = append(values, have[n])
			}
		}
		// Label values are UTF-8, which never holds the byte 0xff.
		key := strings.Join(values, "\xff")
		s, ok := sums[key]
		if !ok {
			s = &series{labels: values, buckets: map[float64]uint64{}}
			sums[key] = s
			order = append(order, key)
		}
		switch f.GetType() {
		case dto.MetricType_GAUGE:
			s.value += metric.GetGauge().GetValue()
		case dto.MetricType_COUNTER:
			s.value += metric.GetCounter().GetValue()
		case dto.MetricType_HISTOGRAM:
			h := metric.GetHistogram()
			s.count += h.GetSampleCount()
			s.sum += h.GetSampleSum()
			for _, b := range h.GetBucket() {
				s.buckets[b.GetUpperBound()] += b.GetCumulativeCount()
			}
		}
	}
	for _, key := range order {
		s := sums[key]
		var metric prometheus.Metric
		var err error
		switch f.GetType() {
		case dto.MetricType_GAUGE:
			metric, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, s.value, s.labels...)
		case dto.MetricType_COUNTER:
			metric, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, s.value, s.labels...)
		case dto.MetricType_HISTOGRAM:
			metric, err = prometheus.NewConstHistogram(desc, s.count, s.sum, s.buckets, s.labels...)
		}
		if err == nil && metric != nil {
			ch <- metric
		}
	}
}
