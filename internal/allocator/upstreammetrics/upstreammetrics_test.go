package upstreammetrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/internal/allocator/upstreammetrics"
)

// TestCollector: each upstream series is derived from shardwise's metric
// of the table: labels renamed, labels upstream lacks summed away
// (histogram buckets included), upstream's extra labels added, and the
// strategy read at every scrape. A shardwise metric that is absent gives no
// upstream series.
func TestCollector(t *testing.T) {
	t.Parallel()
	src := prometheus.NewRegistry()
	targets := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shardwise_allocator_targets", Help: "h"}, []string{"collector"})
	perJob := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shardwise_allocator_discovery_targets", Help: "h"}, []string{"job_name"})
	http := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shardwise_allocator_http_request_duration_seconds", Help: "h", Buckets: []float64{0.1, 1}}, []string{"route", "code"})
	src.MustRegister(targets, perJob, http)
	targets.WithLabelValues("c0").Set(3)
	targets.WithLabelValues("c1").Set(4)
	perJob.WithLabelValues("a").Set(5)
	perJob.WithLabelValues("b").Set(2)
	http.WithLabelValues("/jobs", "200").Observe(0.05)
	http.WithLabelValues("/jobs", "404").Observe(0.5)
	http.WithLabelValues("/scrape_configs", "200").Observe(2)

	strategy := "consistent-hashing"
	up := prometheus.NewRegistry()
	up.MustRegister(upstreammetrics.New(src, func() string { return strategy }))
	require.NoError(t, testutil.GatherAndCompare(up, strings.NewReader(`
# HELP opentelemetry_allocator_http_duration_seconds Duration of received HTTP requests.
# TYPE opentelemetry_allocator_http_duration_seconds histogram
opentelemetry_allocator_http_duration_seconds_bucket{path="/jobs",le="0.1"} 1
opentelemetry_allocator_http_duration_seconds_bucket{path="/jobs",le="1"} 2
opentelemetry_allocator_http_duration_seconds_bucket{path="/jobs",le="+Inf"} 2
opentelemetry_allocator_http_duration_seconds_sum{path="/jobs"} 0.55
opentelemetry_allocator_http_duration_seconds_count{path="/jobs"} 2
opentelemetry_allocator_http_duration_seconds_bucket{path="/scrape_configs",le="0.1"} 0
opentelemetry_allocator_http_duration_seconds_bucket{path="/scrape_configs",le="1"} 0
opentelemetry_allocator_http_duration_seconds_bucket{path="/scrape_configs",le="+Inf"} 1
opentelemetry_allocator_http_duration_seconds_sum{path="/scrape_configs"} 2
opentelemetry_allocator_http_duration_seconds_count{path="/scrape_configs"} 1
# HELP opentelemetry_allocator_targets_per_collector The number of targets for each collector.
# TYPE opentelemetry_allocator_targets_per_collector gauge
opentelemetry_allocator_targets_per_collector{collector_name="c0",strategy="consistent-hashing"} 3
opentelemetry_allocator_targets_per_collector{collector_name="c1",strategy="consistent-hashing"} 4
# HELP opentelemetry_allocator_targets_remaining Number of targets kept after filtering.
# TYPE opentelemetry_allocator_targets_remaining gauge
opentelemetry_allocator_targets_remaining 7
`)))

	// A reload to another strategy shows at the next scrape.
	strategy = "least-weighted"
	require.NoError(t, testutil.GatherAndCompare(up, strings.NewReader(`
# HELP opentelemetry_allocator_targets_per_collector The number of targets for each collector.
# TYPE opentelemetry_allocator_targets_per_collector gauge
opentelemetry_allocator_targets_per_collector{collector_name="c0",strategy="least-weighted"} 3
opentelemetry_allocator_targets_per_collector{collector_name="c1",strategy="least-weighted"} 4
`), "opentelemetry_allocator_targets_per_collector"))
}

// TestEvents: upstream's events counter is made of two shardwise counters,
// one per source, in one family.
func TestEvents(t *testing.T) {
	t.Parallel()
	src := prometheus.NewRegistry()
	reloads := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardwise_allocator_config_reloads_total", Help: "h"}, []string{"result"})
	generations := prometheus.NewCounter(prometheus.CounterOpts{Name: "shardwise_allocator_prometheus_cr_generations_total", Help: "h"})
	src.MustRegister(reloads, generations)
	reloads.WithLabelValues("success").Add(2)
	reloads.WithLabelValues("failure").Inc()
	generations.Add(5)

	up := prometheus.NewPedanticRegistry()
	up.MustRegister(upstreammetrics.New(src, func() string { return "consistent-hashing" }))
	require.NoError(t, testutil.GatherAndCompare(up, strings.NewReader(`
# HELP opentelemetry_allocator_events_total Number of events in the channel.
# TYPE opentelemetry_allocator_events_total counter
opentelemetry_allocator_events_total{source="EventSourceConfigMap"} 3
opentelemetry_allocator_events_total{source="EventSourcePrometheusCR"} 5
`), "opentelemetry_allocator_events_total"))
}
