package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	promconfig "github.com/prometheus/prometheus/config"

	"github.com/shardwise/shardwise/allocation"
)

// Assignments is the source of the target assignment the server serves.
//
// Snapshot must never block and must never return nil; the returned snapshot
// is immutable (allocation.Snapshot guarantees both). The server calls it once
// per request, so a request sees one consistent assignment.
// *allocation.Allocator satisfies it.
type Assignments interface {
	Snapshot() *allocation.Snapshot
}

var _ Assignments = (*allocation.Allocator)(nil)

// PollObserver is told, when the Assignments implement it, of every answer
// to a collector's poll of its targets of a job (/jobs/<job>/targets with
// collector_id), 304 included, with the snapshot it was answered from: an
// allocation.Handoff releases previous owners on it. It must not block.
type PollObserver interface {
	Polled(collector, job string, snap *allocation.Snapshot)
}

// ScrapeConfigs is the source of the jobs served at /scrape_configs.
//
// ScrapeConfigs returns the current scrape configs keyed by job name, and
// whether the first complete set has been built (until then /readyz answers
// 503). It must not block. The returned map and the configs it holds are
// immutable: a changed set is published as a new map. The server caches the
// serialized response per map identity, so returning the same map costs
// nothing and returning a new map for an unchanged set costs one
// serialization. A nil map is served as {}.
type ScrapeConfigs interface {
	ScrapeConfigs() (configs map[string]*promconfig.ScrapeConfig, ready bool)
}

// PendingJobs may be implemented by the ScrapeConfigs source. JobPending
// reports whether a job of the set has no known targets yet (its service
// discovery has not reported): its targets are answered 503, not [], so a
// Prometheus http_sd client keeps the targets it has. It must not block.
type PendingJobs interface {
	JobPending(job string) bool
}

// Default addresses, as in the OpenTelemetry Operator's target allocator.
const (
	DefaultListenAddr      = ":8080"
	DefaultHTTPSListenAddr = ":8443"
	// DefaultShutdownTimeout bounds the graceful shutdown in Run.
	DefaultShutdownTimeout = 15 * time.Second
)

// Options configure a Server.
type Options struct {
	// Assignments is where target assignments are read from. Required.
	Assignments Assignments
	// ScrapeConfigs is where the scrape configs are read from. When nil,
	// /scrape_configs serves {} and /readyz is always ready.
	ScrapeConfigs ScrapeConfigs

	// ListenAddr is the plain HTTP address Run listens on; DefaultListenAddr
	// when empty.
	ListenAddr string
	// HTTPS, when not nil, makes Run also serve the API over mutually
	// authenticated TLS. Secrets in /scrape_configs are delivered only over
	// that listener (or everywhere with AllowInsecureSecrets).
	HTTPS *HTTPSOptions
	// AllowInsecureSecrets serves the real secret values in /scrape_configs
	// to every client, mTLS or not. It is logged as a warning by New.
	AllowInsecureSecrets bool

	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// Registerer receives the HTTP metrics; nil means a new private
	// registry. The global default registry should not be passed.
	Registerer prometheus.Registerer
	// Gatherer is served at /metrics. When nil, Registerer is used if it is
	// also a Gatherer (a *prometheus.Registry is both).
	Gatherer prometheus.Gatherer

	// ShutdownTimeout bounds the graceful shutdown when Run's context is
	// done; DefaultShutdownTimeout when zero.
	ShutdownTimeout time.Duration

	// ResponseCacheBytes bounds the serialized target responses kept in
	// memory (per-collector and whole-job bodies); the least recently used
	// are evicted past it. DefaultResponseCacheBytes when zero.
	ResponseCacheBytes int64
	// EnablePprof serves net/http/pprof under /debug/pprof/. Off by
	// default: the plain HTTP port answers anyone, and a profile costs CPU.
	// Profiles and traces are bounded to maxProfileDuration.
	EnablePprof bool
	// Live, when set, is asked by /livez: a non-nil error (the allocation
	// loop is stuck, say) answers 503 with its message.
	Live func() error
}

// HTTPSOptions configure the mutual-TLS listener. The field names follow the
// https block of the OpenTelemetry Operator's targetallocator.yaml
// (listen_addr, ca_file_path, tls_cert_file_path, tls_key_file_path).
// Rotated files need no restart: the key pair is reloaded when its files
// change (controller-runtime's certwatcher: on a file event, and every 10 s)
// and the CA file is re-read at every handshake; new files are used as soon
// as they parse, and until then the last good ones.
type HTTPSOptions struct {
	// ListenAddr is the TLS address; DefaultHTTPSListenAddr when empty.
	ListenAddr string
	// CAFile holds the PEM certificates of the CAs that sign client
	// certificates. A client certificate is required and verified.
	CAFile string
	// CertFile and KeyFile hold the server's PEM certificate chain and key.
	CertFile string
	KeyFile  string
	// PlainHTTPAPI keeps serving the target API (/scrape_configs, /jobs and
	// the status page) on the plain HTTP listener too, as the upstream
	// allocator does. By default, with HTTPS on, the plain listener serves
	// only /livez, /readyz, /metrics (and pprof when enabled) and answers 403
	// elsewhere: targets' discovered labels and the job set are for the
	// authenticated collectors alone.
	PlainHTTPAPI bool
}

// Server is the allocator's HTTP server. Create it with New, serve it with
// Run or mount Handler.
type Server struct {
	opts    Options
	log     *slog.Logger
	engine  *gin.Engine
	metrics *metrics
	tls     *certs // nil without HTTPS

	cache   *bodyCache
	configs configCache
	jobs    jobsCache
	page    statusCache
	// lookups holds a token per running status-page lookup (maxLookups).
	lookups chan struct{}

	mu        sync.Mutex    // guards running
	running   bool          // Run has been called
	listening chan struct{} // closed once Run's listeners are bound
	httpAddr  net.Addr      // set before listening is closed
	httpsAddr net.Addr      // set before listening is closed; nil without HTTPS
}

// SetReleaseMode puts gin, whose mode is process-wide, in release mode (no
// debug route listing on start). A binary calls it once before New; the
// server changes no gin globals itself.
func SetReleaseMode() { gin.SetMode(gin.ReleaseMode) }

// New returns a server for the given options. It reads the TLS files when
// HTTPS is configured, so a bad certificate fails here rather than at the
// first handshake.
func New(opts Options) (*Server, error) {
	if opts.Assignments == nil {
		return nil, errors.New("server: Options.Assignments is required")
	}
	if opts.ListenAddr == "" {
		opts.ListenAddr = DefaultListenAddr
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.ResponseCacheBytes < 0 {
		return nil, errors.New("server: Options.ResponseCacheBytes is negative")
	}
	if opts.ResponseCacheBytes == 0 {
		opts.ResponseCacheBytes = DefaultResponseCacheBytes
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Registerer == nil {
		reg := prometheus.NewRegistry()
		opts.Registerer = reg
		if opts.Gatherer == nil {
			opts.Gatherer = reg
		}
	}
	if opts.Gatherer == nil {
		if g, ok := opts.Registerer.(prometheus.Gatherer); ok {
			opts.Gatherer = g
		} else {
			opts.Gatherer = prometheus.Gatherers{}
		}
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("register server metrics: %w", err)
	}
	s := &Server{
		opts:      opts,
		log:       log,
		metrics:   m,
		cache:     newBodyCache(opts.ResponseCacheBytes, m),
		listening: make(chan struct{}),
		lookups:   make(chan struct{}, maxLookups),
	}
	if opts.HTTPS != nil {
		https := *opts.HTTPS // a copy: the caller's struct is left alone
		if https.ListenAddr == "" {
			https.ListenAddr = DefaultHTTPSListenAddr
		}
		s.opts.HTTPS = &https
		if s.tls, err = newCerts(https, log, m); err != nil {
			return nil, fmt.Errorf("load https certificates: %w", err)
		}
		if err := registerCertwatcherMetrics(opts.Registerer); err != nil {
			return nil, err
		}
	}
	if opts.AllowInsecureSecrets {
		log.Warn("allow_insecure_auth_secrets is set: /scrape_configs serves secrets in clear text to every client")
	}
	s.engine = s.router()
	return s, nil
}

// Handler returns the HTTP handler serving every route, for tests and for
// embedding in another server.
func (s *Server) Handler() http.Handler { return s.engine }

// Run serves HTTP on ListenAddr, and HTTPS with mutual TLS on
// HTTPS.ListenAddr when configured, until ctx is done; it then shuts the
// listeners down gracefully within ShutdownTimeout. It returns nil after a
// shutdown caused by ctx, or the first listener error. Run may be called
// once.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return errors.New("server: Run called twice")
	}
	s.running = true
	s.mu.Unlock()

	if ctx.Err() != nil {
		return nil // stopped before it started
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.opts.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.opts.ListenAddr, err)
	}
	errLog := slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	servers := []*http.Server{s.httpServer(errLog, nil)}
	listeners := []net.Listener{ln}
	s.httpAddr = ln.Addr()
	// The key pair's watcher, with HTTPS: it stops with the listeners.
	watch := &keyPairWatch{stop: func() error { return nil }}
	if s.tls != nil {
		var tln net.Listener
		var srv *http.Server
		if tln, srv, watch, err = s.listenTLS(ctx, &lc, errLog); err != nil {
			_ = ln.Close()
			return err
		}
		defer watch.cancel()
		servers = append(servers, srv)
		listeners = append(listeners, tln)
	}
	close(s.listening)

	errc := make(chan error, len(servers))
	for i, srv := range servers {
		s.log.Info("serving", "addr", listeners[i].Addr().String(), "tls", i == 1)
		go func() { errc <- srv.Serve(listeners[i]) }()
	}

	var runErr error
	pending := len(servers)
	select {
	case <-ctx.Done():
	case err := <-errc:
		pending--
		runErr = fmt.Errorf("serve: %w", err)
	case err := <-watch.done: // it returns before ctx is done only on an error
		watch.stop = func() error { return nil }
		if ctx.Err() == nil {
			runErr = fmt.Errorf("watch https key pair: %w", err)
		}
	}
	return s.shutdown(ctx, servers, errc, pending, watch, runErr)
}

// keyPairWatch is the running watcher of the HTTPS key pair: done receives
// its result, stop cancels it and waits for it.
type keyPairWatch struct {
	done   <-chan error
	cancel context.CancelFunc
	stop   func() error
}

// listenTLS listens on the HTTPS address and starts the key pair's watcher;
// it returns the TLS listener and its server.
func (s *Server) listenTLS(ctx context.Context, lc *net.ListenConfig, errLog *log.Logger) (net.Listener, *http.Server, *keyPairWatch, error) {
	tln, err := lc.Listen(ctx, "tcp", s.opts.HTTPS.ListenAddr)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listen on %s: %w", s.opts.HTTPS.ListenAddr, err)
	}
	s.httpsAddr = tln.Addr()
	pair, err := s.tls.watcher()
	if err != nil {
		_ = tln.Close()
		return nil, nil, nil, fmt.Errorf("load https certificates: %w", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- pair.Start(wctx) }()
	watch := &keyPairWatch{done: done, cancel: cancel, stop: func() error {
		cancel()
		return <-done
	}}
	tlsConfig := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.tls.config()
		},
	}
	return tls.NewListener(tln, tlsConfig), s.httpServer(errLog, tlsConfig), watch, nil
}

// shutdown stops the servers gracefully within ShutdownTimeout, waits for
// the pending Serve calls and the key pair's watcher, and returns runErr or
// else the first error they report.
func (s *Server) shutdown(ctx context.Context, servers []*http.Server, errc <-chan error, pending int, watch *keyPairWatch, runErr error) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(sctx); err != nil {
			s.log.Warn("graceful shutdown incomplete", "err", err)
			_ = srv.Close()
		}
	}
	for range pending {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) && runErr == nil {
			runErr = fmt.Errorf("serve: %w", err)
		}
	}
	if err := watch.stop(); err != nil && runErr == nil {
		runErr = fmt.Errorf("watch https key pair: %w", err)
	}
	s.log.Info("server stopped")
	return runErr
}

// Connection timeouts. Requests carry no body, so reading one is quick;
// writing one may take a while for a large job to a slow client, and a pprof
// profile streams for up to maxProfileDuration. Idle keep-alive connections
// (collectors poll every interval, 30s by default) are closed after a while.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = maxProfileDuration + time.Minute
	idleTimeout       = 5 * time.Minute
)

// httpServer returns an http.Server for the engine with every phase of a
// connection bounded.
func (s *Server) httpServer(errLog *log.Logger, tlsConfig *tls.Config) *http.Server {
	return &http.Server{
		Handler:           s.engine,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          errLog,
		TLSConfig:         tlsConfig,
	}
}

// Addrs waits until Run has bound its listeners and returns their addresses
// (httpsAddr is nil without HTTPS), or ctx's error. It serves callers that
// listen on port 0 or print the status page URL once it is reachable.
func (s *Server) Addrs(ctx context.Context) (httpAddr, httpsAddr net.Addr, err error) {
	select {
	case <-s.listening:
		return s.httpAddr, s.httpsAddr, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

// router builds the gin engine. Nothing here touches gin's process-wide
// state (mode, default writers): the process owner sets those.
func (s *Server) router() *gin.Engine {
	r := gin.New()
	// Job names arrive query-escaped in the path (serviceMonitor%2Fns%2Fapp%2F0):
	// route on the escaped path and unescape the parameter ourselves.
	r.UseEscapedPath = true
	r.UnescapePathValues = false
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleMethodNotAllowed = false
	r.ContextWithFallback = false
	r.Use(s.observe, gin.CustomRecoveryWithWriter(io.Discard, s.recovered))
	r.NoRoute(func(c *gin.Context) { s.writeError(c, http.StatusNotFound, "no such route") })

	r.GET("/", s.overTLS, s.status)
	// Until ready, the job set and the assignments are not known: answering
	// {} or [] would make the receiver drop its jobs and targets, whereas an
	// error makes it keep them until its next poll.
	r.GET("/scrape_configs", s.overTLS, s.whenReady, s.scrapeConfigs)
	r.GET("/jobs", s.overTLS, s.whenReady, s.jobList)
	r.GET("/jobs/:job/targets", s.overTLS, s.whenReady, s.whenJobKnown, s.jobTargets)
	r.GET("/livez", s.livez)
	r.GET("/readyz", s.readyz)
	r.GET("/metrics", gin.WrapH(s.metricsHandler()))
	if s.opts.EnablePprof {
		r.GET("/debug/pprof/*profile", s.pprof)
	}
	return r
}

// recovered answers a request whose handler panicked.
func (s *Server) recovered(c *gin.Context, err any) {
	s.metrics.panics.Inc()
	s.log.Error("handler panicked", "route", c.FullPath(), "err", err)
	s.writeError(c, http.StatusInternalServerError, "internal error")
}

func (s *Server) livez(c *gin.Context) {
	if s.opts.Live != nil {
		if err := s.opts.Live(); err != nil {
			c.String(http.StatusServiceUnavailable, err.Error())
			return
		}
	}
	c.String(http.StatusOK, "ok")
}

func (s *Server) readyz(c *gin.Context) {
	if s.opts.ScrapeConfigs != nil {
		if _, ready := s.opts.ScrapeConfigs.ScrapeConfigs(); !ready {
			c.String(http.StatusServiceUnavailable, "scrape configs not ready")
			return
		}
	}
	c.String(http.StatusOK, "ok")
}

// overTLS answers 403 to a plain HTTP request for the target API when the
// server also serves HTTPS, unless HTTPSOptions.PlainHTTPAPI.
func (s *Server) overTLS(c *gin.Context) {
	h := s.opts.HTTPS
	if h == nil || h.PlainHTTPAPI || c.Request.TLS != nil {
		return
	}
	s.writeError(c, http.StatusForbidden, "this allocator serves targets and scrape configs only over mutual TLS (https on "+h.ListenAddr+"); set https.plain_http_api to serve them over plain HTTP too")
}

// whenReady answers 503 until the first complete job set and collector set
// are known.
func (s *Server) whenReady(c *gin.Context) {
	if s.opts.ScrapeConfigs == nil {
		return
	}
	if _, ready := s.opts.ScrapeConfigs.ScrapeConfigs(); !ready {
		s.writeError(c, http.StatusServiceUnavailable, "not ready: the first scrape configs or collectors are not known yet")
	}
}

// whenJobKnown answers 503 for a job whose targets are not known yet.
func (s *Server) whenJobKnown(c *gin.Context) {
	p, ok := s.opts.ScrapeConfigs.(PendingJobs)
	if !ok {
		return
	}
	if job, err := url.QueryUnescape(c.Param("job")); err == nil && p.JobPending(job) {
		s.writeError(c, http.StatusServiceUnavailable, "job "+strconv.Quote(job)+": service discovery has not reported its targets yet")
	}
}

// errorBody is the JSON body of every error response.
type errorBody struct {
	Error string `json:"error"`
}

// writeError aborts the request with a JSON error message.
func (s *Server) writeError(c *gin.Context, code int, msg string) {
	b, _ := json.Marshal(errorBody{Error: msg}) // cannot fail for a string field
	c.Abort()
	c.Data(code, "application/json", b)
}
