package server

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shardwise/shardwise/internal/metricset"
)

// metrics are the serving metrics. The allocation metrics (targets per
// collector, movement) belong to the allocator's wiring, not here.
type metrics struct {
	duration       *prometheus.HistogramVec
	inFlight       prometheus.Gauge
	panics         prometheus.Counter
	cacheHits      prometheus.Counter
	cacheMiss      prometheus.Counter
	cacheSize      prometheus.Gauge
	cacheBytes     prometheus.Gauge
	cacheEvictions prometheus.Counter
	encodeErrs     prometheus.Counter
	tlsReloads     *prometheus.CounterVec

	mu        sync.RWMutex // guards observers
	observers map[routeCode]prometheus.Observer
}

type routeCode struct {
	route string
	code  int
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	s := metricset.New(reg)
	m := &metrics{
		duration: s.HistogramVec("shardwise_allocator_http_request_duration_seconds", "Duration of HTTP requests by route and status code.",
			[]float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}, "route", "code"),
		inFlight:  s.Gauge("shardwise_allocator_http_requests_in_flight", "HTTP requests being served."),
		panics:    s.Counter("shardwise_allocator_http_panics_total", "HTTP handlers that panicked and were recovered."),
		cacheHits: s.Counter("shardwise_allocator_http_target_cache_hits_total", "Per (collector, job) target responses served from the cache."),
		cacheMiss: s.Counter("shardwise_allocator_http_target_cache_misses_total",
			"Per (collector, job) target responses serialized because the slice changed or was not cached yet."),
		cacheSize: s.Gauge("shardwise_allocator_http_target_cache_entries",
			"Serialized target responses (per collector and job, or per whole job) held in the cache."),
		cacheBytes: s.Gauge("shardwise_allocator_http_target_cache_bytes", "Bytes held by the target response cache, bounded by the response cache size."),
		cacheEvictions: s.Counter("shardwise_allocator_http_target_cache_evictions_total",
			"Least recently used target responses evicted to keep the cache within its size in bytes."),
		encodeErrs: s.Counter("shardwise_allocator_scrape_configs_encode_errors_total",
			"Scrape config sets that could not be serialized; the last good response keeps being served."),
		tlsReloads: s.CounterVec("shardwise_allocator_tls_reloads_total", "Loads of changed TLS certificate files by result (success, failure).", "result"),
		observers:  map[routeCode]prometheus.Observer{},
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// observer returns the duration histogram for a route and status code,
// resolved once so the request path does not allocate label values.
func (m *metrics) observer(route string, code int) prometheus.Observer {
	k := routeCode{route, code}
	m.mu.RLock()
	o, ok := m.observers[k]
	m.mu.RUnlock()
	if ok {
		return o
	}
	o = m.duration.WithLabelValues(route, strconv.Itoa(code))
	m.mu.Lock()
	m.observers[k] = o
	m.mu.Unlock()
	return o
}

// observe is the outermost middleware: it times every request by route.
func (s *Server) observe(c *gin.Context) {
	start := time.Now()
	s.metrics.inFlight.Inc()
	c.Next()
	s.metrics.inFlight.Dec()
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	s.metrics.observer(route, c.Writer.Status()).Observe(time.Since(start).Seconds())
}

func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.opts.Gatherer, promhttp.HandlerOpts{})
}

// maxProfileDuration bounds the `seconds` of /debug/pprof/profile and
// /debug/pprof/trace, and of the delta profiles (heap, allocs, ...), so a
// request cannot keep a profiler and a connection busy for long.
const maxProfileDuration = 60 * time.Second

// pprof serves net/http/pprof under /debug/pprof/ (only with EnablePprof).
// A `seconds` above maxProfileDuration is refused with 400.
func (s *Server) pprof(c *gin.Context) {
	if raw := c.Query("seconds"); raw != "" {
		secs, err := strconv.ParseFloat(raw, 64)
		if err != nil || secs <= 0 || secs > maxProfileDuration.Seconds() {
			s.writeError(c, http.StatusBadRequest, fmt.Sprintf("seconds must be a number in (0, %d]", int(maxProfileDuration.Seconds())))
			return
		}
	}
	switch strings.TrimPrefix(c.Param("profile"), "/") {
	case "cmdline":
		pprof.Cmdline(c.Writer, c.Request)
	case "profile":
		pprof.Profile(c.Writer, c.Request)
	case "symbol":
		pprof.Symbol(c.Writer, c.Request)
	case "trace":
		pprof.Trace(c.Writer, c.Request)
	default:
		pprof.Index(c.Writer, c.Request)
	}
}
