package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests"
)

// CRMetrics is the upstream operator's --enable-cr-metrics series
// (internal/metrics/metrics.go upstream), with its names and labels:
// opentelemetry_collector_info{collector_name, namespace, type=<mode>} and,
// per component kind, opentelemetry_collector_<kind>{collector_name,
// namespace, type=<component type>}, each 1 per collector and type, so
// that sum by (type) counts the collectors using one. Upstream keeps them
// with up-down counters moved on every event; here they are read from the
// operator's cache at every scrape, so they cannot drift.
type CRMetrics struct {
	// Reader lists the collectors: the manager's cache.
	Reader client.Reader
}

var _ prometheus.Collector = CRMetrics{}

// crMetricsPrefix is upstream's.
const crMetricsPrefix = "opentelemetry_collector_"

// crComponentKinds are the component kinds with a series each.
var crComponentKinds = []string{"receivers", "exporters", "processors", "extensions", "connectors"}

var (
	crLabels = []string{"collector_name", "namespace", "type"}
	crInfo   = prometheus.NewDesc(crMetricsPrefix+"info", "Collectors by mode (type): 1 per collector.", crLabels, nil)
	crKinds  = func() map[string]*prometheus.Desc {
		out := map[string]*prometheus.Desc{}
		for _, k := range crComponentKinds {
			out[k] = prometheus.NewDesc(crMetricsPrefix+k, "Collectors by "+strings.TrimSuffix(k, "s")+" type: 1 per collector and type.", crLabels, nil)
		}
		return out
	}()
)

// Describe sends the descriptors of every series.
func (m CRMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- crInfo
	for _, k := range crComponentKinds {
		ch <- crKinds[k]
	}
}

// Collect lists the collectors and sends their series; a failed list is an
// invalid metric, which fails the scrape with the error.
func (m CRMetrics) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var list v1beta1.OpenTelemetryCollectorList
	if err := m.Reader.List(ctx, &list); err != nil {
		ch <- prometheus.NewInvalidMetric(crInfo, fmt.Errorf("list collectors: %w", err))
		return
	}
	for i := range list.Items {
		c := &list.Items[i]
		ch <- one(crInfo, c.Name, c.Namespace, string(manifests.ModeOf(c)))
		for kind, types := range componentTypes(c.Spec.Config) {
			for _, t := range types {
				ch <- one(crKinds[kind], c.Name, c.Namespace, t)
			}
		}
	}
}

// one is the series of desc with labels, of value 1.
func one(desc *prometheus.Desc, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, 1, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	return m
}

// componentTypes are the distinct component types ("otlp" for "otlp/2") a
// configuration declares, per kind.
func componentTypes(cfg v1beta1.Config) map[string][]string {
	declared := map[string]map[string]any{"receivers": cfg.Receivers.Object, "exporters": cfg.Exporters.Object}
	for kind, o := range map[string]*v1beta1.AnyConfig{"processors": cfg.Processors, "extensions": cfg.Extensions, "connectors": cfg.Connectors} {
		if o != nil {
			declared[kind] = o.Object
		}
	}
	out := map[string][]string{}
	for kind, ids := range declared {
		set := map[string]bool{}
		for id := range ids {
			typ, _, _ := strings.Cut(id, "/")
			set[typ] = true
		}
		if len(set) > 0 {
			out[kind] = slices.Sorted(maps.Keys(set))
		}
	}
	return out
}
