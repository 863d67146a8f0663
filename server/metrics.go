package server

import (
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the serving metrics. The allocation metrics (targets per
// collector, movement) belong to the allocator's wiring, not here.
type metrics struct {
	duration   *prometheus.HistogramVec
	inFlight   prometheus.Gauge
	panics     prometheus.Counter
	cacheHits  prometheus.Counter
	cacheMiss  prometheus.Counter
	cacheSize  prometheus.Gauge
	encodeErrs prometheus.Counter
	tlsReloads *prometheus.CounterVec

	mu        sync.RWMutex // guards observers
	observers map[routeCode]prometheus.Observer
}

type routeCode struct {
	route string
	code  int
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "shardwise_allocator_http_request_duration_seconds",
			Help:    "Duration of HTTP requests by route and status code.",
			Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "code"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardwise_allocator_http_requests_in_flight",
			Help: "HTTP requests being served.",
		}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardwise_allocator_http_panics_total",
			Help: "HTTP handlers that panicked and were recovered.",
		}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardwise_allocator_http_target_cache_hits_total",
			Help: "Per (collector, job) target responses served from the cache.",
		}),
		cacheMiss: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardwise_allocator_http_target_cache_misses_total",
			Help: "Per (collector, job) target responses serialized because the slice changed or was not cached yet.",
		}),
		cacheSize: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardwise_allocator_http_target_cache_entries",
			Help: "Serialized per (collector, job) target responses held in the cache.",
		}),
		encodeErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardwise_allocator_scrape_configs_encode_errors_total",
			Help: "Scrape config sets that could not be serialized; the last good response keeps being served.",
		}),
		tlsReloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardwise_allocator_tls_reloads_total",
			Help: "Loads of changed TLS certificate files by result (success, failure).",
		}, []string{"result"}),
		observers: map[routeCode]prometheus.Observer{},
	}
	cs := []prometheus.Collector{m.duration, m.inFlight, m.panics, m.cacheHits, m.cacheMiss, m.cacheSize, m.encodeErrs, m.tlsReloads}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done) // leave the registry as it was
			}
			return nil, err
		}
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

// pprofHandler serves net/http/pprof under /debug/pprof/.
func pprofHandler(c *gin.Context) {
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
