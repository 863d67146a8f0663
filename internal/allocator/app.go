package allocator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	monitoringclient "github.com/prometheus-operator/prometheus-operator/pkg/client/versioned"
	"github.com/prometheus/client_golang/prometheus"
	promconfig "github.com/prometheus/prometheus/config"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/discovery"
	"github.com/shardwise/shardwise/discovery/collector"
	"github.com/shardwise/shardwise/discovery/operator"
	"github.com/shardwise/shardwise/internal/allocator/upstreammetrics"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
	"github.com/shardwise/shardwise/internal/clientgo"
	"github.com/shardwise/shardwise/server"
)

// Options configure Run.
type Options struct {
	// ConfigFile is the allocator config file; it is watched and reloaded.
	ConfigFile string
	// Flags override keys of the file, on every load and reload.
	Flags Flags
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
	// Registry receives every metric and serves /metrics; nil makes a private one.
	Registry *prometheus.Registry
	// ReloadDelay coalesces bursts of file events into one reload; zero means 250ms.
	ReloadDelay time.Duration
	// CoalesceInterval is discovery's least time between updates; zero means
	// discovery's default (1s).
	CoalesceInterval time.Duration
	// Ready, when set, is called once with the address the HTTP server
	// listens on, once it listens.
	Ready func(httpAddr string)
	// PollInterval is how often the config file is read for changes when
	// it cannot be watched (fsnotify failed: no inotify instances left, a
	// file system without events); zero means DefaultPollInterval.
	PollInterval time.Duration
	// LivenessTimeout is how long one step of the allocation loop (an
	// update, a collector change, a reload) may take before /livez answers
	// 503; zero means DefaultLivenessTimeout.
	LivenessTimeout time.Duration

	// Test hooks.
	watchErr   error  // when set, the fsnotify watch fails with it
	beforeStep func() // called by the loop before each step
}

// Defaults of Options.
const (
	DefaultPollInterval = 10 * time.Second
	// DefaultLivenessTimeout is far above the longest rebalance measured
	// (about a second for a million targets), so only a loop that is stuck
	// makes the allocator restart.
	DefaultLivenessTimeout = time.Minute
)

// Run loads the config file and runs the allocator until ctx is done. It
// returns an error when the initial config is invalid or a component fails;
// nil after a clean shutdown.
func Run(ctx context.Context, opts Options) error {
	opts = opts.withDefaults()
	log := opts.Logger
	clientgo.DisableWatchList()

	cfg, err := loadConfig(opts.ConfigFile, opts.Flags)
	if err != nil {
		return err
	}
	for _, n := range cfg.notes() {
		log.Warn(n)
	}

	m, err := newMetrics(opts.Registry)
	if err != nil {
		return err
	}
	m.reloads.WithLabelValues("success").Inc()
	m.reloadTimestamp.SetToCurrentTime()

	dm, err := newDiscoveryMetrics(opts.Registry)
	if err != nil {
		return err
	}
	//nolint:contextcheck // the manager owns its discovery context; Run(ctx) stops it
	mgr, err := newDiscovery(opts, cfg, dm)
	if err != nil {
		return err
	}
	alloc, err := allocation.New(cfg.allocationOptions())
	if err != nil {
		return err
	}
	st := &state{}
	st.alloc.Store(alloc)
	st.setHandoff(cfg.Handoff)
	if err := handoffMetrics(opts.Registry, st); err != nil {
		return fmt.Errorf("handoff metrics: %w", err)
	}
	hb := &heartbeat{timeout: opts.LivenessTimeout}
	srv, err := newServer(opts, cfg, st, hb)
	if err != nil {
		return err
	}
	collectors, crWatcher, err := newKubernetesWatchers(log, cfg, dm, mgr)
	if err != nil {
		return err
	}

	l := &loop{
		log:     log,
		metrics: m,
		mgr:     mgr,
		state:   st,
		cfg:     cfg,
		path:    opts.ConfigFile,
		flags:   opts.Flags,
		targets: map[string][]*allocation.Target{},
		hb:      hb,
		before:  opts.beforeStep,
	}
	return runComponents(ctx, opts, cfg.sum, mgr, srv, collectors, crWatcher, l)
}

// withDefaults fills in the zero fields of o.
func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.ReloadDelay <= 0 {
		o.ReloadDelay = 250 * time.Millisecond
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.LivenessTimeout <= 0 {
		o.LivenessTimeout = DefaultLivenessTimeout
	}
	return o
}

// newDiscovery builds the discovery manager and applies the config file's
// Prometheus config to it.
func newDiscovery(opts Options, cfg *config, dm *discoveryMetrics) (*discovery.Manager, error) {
	mgr, err := discovery.NewManager(discovery.ManagerOptions{
		Logger:           opts.Logger.With("component", "discovery"),
		Metrics:          dm.manager,
		FilterStrategy:   cfg.Discovery.FilterStrategy,
		CoalesceInterval: opts.CoalesceInterval,
		KubeConfigFile:   kubeConfigPath(cfg),
		// With prometheus_cr, the first update waits for the generated jobs
		// so collectors never see a job set without them.
		WaitForOperatorConfig: cfg.Discovery.PrometheusCR.Enabled,
	})
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	if err := mgr.ApplyConfig(promConfig(cfg)); err != nil {
		return nil, fmt.Errorf("config file %s: %w", opts.ConfigFile, err)
	}
	return mgr, nil
}

// The Manager takes the prometheus-operator watcher's job sets.
var _ operator.ConfigSink = (*discovery.Manager)(nil)

// discoveryMetrics are the metrics of the discovery packages, all registered
// on the allocator's registry whichever parts the config uses, so /metrics
// always lists the same families.
type discoveryMetrics struct {
	manager   *discovery.Metrics
	collector *collector.Metrics
	operator  *operator.Metrics
}

func newDiscoveryMetrics(reg prometheus.Registerer) (*discoveryMetrics, error) {
	var (
		dm  discoveryMetrics
		err error
	)
	if dm.manager, err = discovery.NewMetrics(reg); err != nil {
		return nil, fmt.Errorf("discovery metrics: %w", err)
	}
	if dm.collector, err = collector.NewMetrics(reg); err != nil {
		return nil, fmt.Errorf("discovery metrics: %w", err)
	}
	if dm.operator, err = operator.NewMetrics(reg); err != nil {
		return nil, fmt.Errorf("discovery metrics: %w", err)
	}
	return &dm, nil
}

// newServer builds the HTTP server over the state.
func newServer(opts Options, cfg *config, st *state, hb *heartbeat) (*server.Server, error) {
	var https *server.HTTPSOptions
	if cfg.HTTPS.Enabled {
		https = &server.HTTPSOptions{
			ListenAddr:   cfg.HTTPS.ListenAddr,
			CAFile:       cfg.HTTPS.CAFilePath,
			CertFile:     cfg.HTTPS.TLSCertFilePath,
			KeyFile:      cfg.HTTPS.TLSKeyFilePath,
			PlainHTTPAPI: cfg.HTTPS.PlainHTTPAPI,
		}
	}
	// Upstream's metric names beside ours, derived from ours at each scrape.
	upstream := prometheus.NewRegistry()
	strategy := func() string {
		if a := st.alloc.Load(); a != nil {
			return a.Options().Strategy
		}
		return cfg.AllocationStrategy
	}
	if err := upstream.Register(upstreammetrics.New(opts.Registry, strategy)); err != nil {
		return nil, fmt.Errorf("upstream metric names: %w", err)
	}
	srv, err := server.New(server.Options{
		Assignments:          st,
		ScrapeConfigs:        st,
		ListenAddr:           cfg.ListenAddr,
		HTTPS:                https,
		AllowInsecureSecrets: cfg.AllowInsecureAuthSecrets,
		ResponseCacheBytes:   cfg.ResponseCacheBytes,
		EnablePprof:          cfg.EnablePprof,
		Logger:               opts.Logger.With("component", "server"),
		Registerer:           opts.Registry,
		Gatherer:             prometheus.Gatherers{opts.Registry, upstream},
		Live:                 hb.live,
	})
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return srv, nil
}

// newKubernetesWatchers builds the watchers of collector pods and of
// prometheus-operator resources the config asks for; each is nil when it
// does not.
func newKubernetesWatchers(log *slog.Logger, cfg *config, dm *discoveryMetrics, sink operator.ConfigSink) (*collector.Watcher, *operator.Watcher, error) {
	if !usesPods(cfg) && !cfg.Discovery.PrometheusCR.Enabled {
		return nil, nil, nil
	}
	rc, err := kubeConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes client: %w", err)
	}
	var (
		collectors *collector.Watcher
		crWatcher  *operator.Watcher
	)
	if usesPods(cfg) {
		cc := cfg.Discovery.Collector
		collectors, err = collector.NewWatcher(kube, collector.WatcherOptions{
			Logger:      log.With("component", "collectors"),
			Metrics:     dm.collector,
			Namespace:   cc.CollectorNamespace,
			Selector:    cc.CollectorSelector,
			GracePeriod: cc.CollectorNotReadyGracePeriod,
			// With the handoff a terminating collector hands its targets
			// off while it still scrapes them.
			DrainTerminating: cfg.Handoff.On(),
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if cfg.Discovery.PrometheusCR.Enabled {
		mon, err := monitoringclient.NewForConfig(rc)
		if err != nil {
			return nil, nil, fmt.Errorf("prometheus-operator client: %w", err)
		}
		ns := operatorNamespace(cfg, processEnvironment)
		log.Info("prometheus_cr: a null or missing namespace selector selects the allocator's own namespace", "namespace", ns)
		crWatcher, err = operator.NewWatcher(kube, mon, sink, operator.WatcherOptions{
			Logger:    log.With("component", "prometheus-operator"),
			Metrics:   dm.operator,
			Config:    cfg.Discovery.PrometheusCR,
			Namespace: ns,
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return collectors, crWatcher, nil
}

// runComponents runs every component in one errgroup until ctx is done or
// one fails: discovery, the server, the config file watch, the Kubernetes
// watchers (when not nil) and the allocation loop; and calls opts.Ready
// once the server listens.
func runComponents(ctx context.Context, opts Options, loaded []byte, mgr *discovery.Manager, srv *server.Server,
	collectors *collector.Watcher, crWatcher *operator.Watcher, l *loop,
) error {
	reload := make(chan struct{}, 1)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return mgr.Run(ctx) })
	g.Go(func() error { return srv.Run(ctx) })
	g.Go(func() error {
		return watchFile(ctx, opts.Logger, opts.ConfigFile, fileWatch{delay: opts.ReloadDelay, poll: opts.PollInterval, err: opts.watchErr}, loaded, reload)
	})
	var collectorSets <-chan []allocation.Collector
	if collectors != nil {
		collectorSets = collectors.Updates()
		g.Go(func() error { return collectors.Run(ctx) })
	}
	if crWatcher != nil {
		g.Go(func() error { return crWatcher.Run(ctx) })
	}
	var learned chan map[allocation.LearnedKey]uint32
	learner, err := l.cfg.learner(opts.Logger.With("component", "weights"))
	if err != nil {
		return err
	}
	if learner != nil {
		learned = make(chan map[allocation.LearnedKey]uint32)
		g.Go(func() error {
			learner.Run(ctx, func(ws map[allocation.LearnedKey]uint32) {
				select {
				case learned <- ws:
				case <-ctx.Done():
				}
			})
			return nil
		})
	}
	g.Go(func() error { return l.run(ctx, reload, collectorSets, learned) })
	if opts.Ready != nil {
		g.Go(func() error {
			addr, _, err := srv.Addrs(ctx)
			if err != nil {
				return nil // Run failed or ctx ended; Run reports why
			}
			opts.Ready(addr.String())
			return nil
		})
	}
	return g.Wait()
}

// promConfig is the `config:` block, nil when absent.
func promConfig(c *config) *promconfig.Config {
	if c.Discovery.PromConfig == nil {
		return nil
	}
	return c.Discovery.PromConfig.Config
}

// state is what the server reads: the current allocator (replaced when the
// allocation settings change), the current job set, the jobs whose targets
// are not known yet, and whether the first collector set is known.
type state struct {
	alloc      atomic.Pointer[allocation.Allocator]
	configs    atomic.Pointer[map[string]*promconfig.ScrapeConfig] // nil until discovery's first update
	pending    atomic.Pointer[map[string]bool]                     // immutable; nil means none
	collectors atomic.Bool                                         // the first collector set is applied
	handoff    atomic.Pointer[allocation.Handoff]                  // nil when the handoff is off
}

var (
	_ server.Assignments   = (*state)(nil)
	_ server.ScrapeConfigs = (*state)(nil)
	_ server.PendingJobs   = (*state)(nil)
	_ server.PollObserver  = (*state)(nil)
)

// Snapshot implements server.Assignments: the allocator's assignment, with
// moved targets also served to their previous collectors when the handoff is
// on.
func (s *state) Snapshot() *allocation.Snapshot {
	if h := s.handoff.Load(); h != nil {
		return h.Snapshot()
	}
	return s.alloc.Load().Snapshot()
}

// Polled implements server.PollObserver.
func (s *state) Polled(collector, job string, snap *allocation.Snapshot) {
	if h := s.handoff.Load(); h != nil {
		h.Polled(collector, job, snap)
	}
}

// setHandoff puts a new handoff in force (none when disabled); what an
// earlier one held lingers no more.
func (s *state) setHandoff(c allocatorconfig.Handoff) {
	if !c.On() {
		s.handoff.Store(nil)
		return
	}
	s.handoff.Store(allocation.NewHandoff(allocatorSnapshots{s}, allocation.HandoffOptions{MaxOverlap: c.MaxOverlap, Settle: c.Settle}))
}

// allocatorSnapshots is the allocator in force, as a handoff's source.
type allocatorSnapshots struct{ s *state }

func (a allocatorSnapshots) Snapshot() *allocation.Snapshot { return a.s.alloc.Load().Snapshot() }

// ScrapeConfigs implements server.ScrapeConfigs: ready once discovery's
// first update (every job's providers reported, or the bounded wait ended)
// and the first collector set have been applied.
func (s *state) ScrapeConfigs() (map[string]*promconfig.ScrapeConfig, bool) {
	p := s.configs.Load()
	if p == nil {
		return nil, false
	}
	return *p, s.collectors.Load()
}

// JobPending implements server.PendingJobs.
func (s *state) JobPending(job string) bool {
	p := s.pending.Load()
	return p != nil && (*p)[job]
}

// loop owns the allocator's inputs: only its goroutine writes to the
// allocator, so updates are applied in order.
type loop struct {
	log     *slog.Logger
	metrics *metrics
	mgr     *discovery.Manager
	state   *state
	path    string
	flags   Flags

	cfg        *config                         // the config in force
	targets    map[string][]*allocation.Target // the latest target set, to rebuild the allocator
	collectors []allocation.Collector
	learned    map[allocation.LearnedKey]uint32 // the latest learned weights, for a new allocator
	hb         *heartbeat
	before     func() // test hook, nil outside tests
}

func (l *loop) run(ctx context.Context, reload <-chan struct{}, collectorSets <-chan []allocation.Collector, learned <-chan map[allocation.LearnedKey]uint32) error {
	if collectorSets == nil {
		l.setCollectors(staticCollectors(l.cfg))
		if len(l.collectors) == 0 {
			l.log.Warn("no collectors: set `collectors` (a static list) or collector_namespace and collector_selector; targets stay unassigned until there are collectors")
		}
	}
	updates := l.mgr.Updates()
	for {
		select {
		case <-ctx.Done():
			return nil
		case u, ok := <-updates:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return errors.New("discovery stopped")
			}
			l.step(func() { l.apply(u) })
		case cs, ok := <-collectorSets:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return errors.New("collector discovery stopped")
			}
			l.step(func() { l.setCollectors(cs) })
		case <-reload:
			l.step(l.reload)
		case ws := <-learned:
			l.step(func() { l.setLearned(ws) })
		}
	}
}

func (l *loop) apply(u discovery.Update) {
	// A job joins pending before its (empty) targets are applied and leaves
	// it after its targets are in place.
	if p := l.state.pending.Load(); p != nil && len(u.Pending) > 0 {
		both := maps.Clone(*p)
		maps.Copy(both, u.Pending)
		l.state.pending.Store(&both)
	} else if len(u.Pending) > 0 {
		l.state.pending.Store(&u.Pending)
	}
	defer func() {
		pending := u.Pending
		l.state.pending.Store(&pending)
		if u.ScrapeConfigs != nil {
			jobs := u.ScrapeConfigs
			l.state.configs.Store(&jobs)
		}
	}()
	if len(u.Targets) == 0 {
		return
	}
	for job, ts := range u.Targets {
		if len(ts) == 0 {
			delete(l.targets, job)
		} else {
			l.targets[job] = ts
		}
	}
	a := l.state.alloc.Load()
	res := a.SetJobTargets(u.Targets)
	l.observe(res, a)
}

func (l *loop) setCollectors(cs []allocation.Collector) {
	l.collectors = cs
	a := l.state.alloc.Load()
	res := a.SetCollectors(cs)
	l.observe(res, a)
	l.state.collectors.Store(true)
}

// setLearned gives the allocator the weights learned from the collectors'
// scrapes (nil: count targets).
func (l *loop) setLearned(ws map[allocation.LearnedKey]uint32) {
	l.learned = ws
	l.metrics.learned.Set(float64(len(ws)))
	a := l.state.alloc.Load()
	res := a.SetLearnedWeights(ws)
	l.observe(res, a)
	l.log.Info("learned weights applied", "targets", len(ws), "moved", res.Moved)
}

func (l *loop) observe(res allocation.Result, a *allocation.Allocator) {
	l.metrics.observe(res, a.Snapshot())
	l.log.Debug("rebalanced", "targets", res.Targets, "collectors", res.Collectors, "moved", res.Moved, "min", res.Min, "unassigned", res.Unassigned, "duration", res.Duration)
}

// reload reads the config file again. On any error the config in force stays.
func (l *loop) reload() {
	next, err := loadConfig(l.path, l.flags)
	if err == nil {
		err = l.applyConfig(next)
	}
	if err != nil {
		l.metrics.reloads.WithLabelValues("failure").Inc()
		l.log.Error("config reload failed; keeping the last good config", "file", l.path, "err", err)
		return
	}
	l.metrics.reloads.WithLabelValues("success").Inc()
	l.metrics.reloadTimestamp.SetToCurrentTime()
	l.log.Info("config reloaded", "file", l.path)
}

func (l *loop) applyConfig(next *config) error {
	prev := l.cfg
	if next.allocationOptions() != prev.allocationOptions() {
		a, err := allocation.New(next.allocationOptions())
		if err != nil {
			return err
		}
		a.SetCollectors(l.collectors)
		if l.learned != nil {
			a.SetLearnedWeights(l.learned)
		}
		res := a.SetJobTargets(maps.Clone(l.targets))
		l.state.alloc.Store(a)
		l.observe(res, a)
		l.log.Info("allocation settings changed", "strategy", next.AllocationStrategy, "fallback", next.AllocationFallbackStrategy, "epsilon", next.BalanceEpsilon)
	}
	if err := l.mgr.ApplyConfig(promConfig(next)); err != nil {
		return err
	}
	if !reflect.DeepEqual(next.Handoff, prev.Handoff) {
		l.state.setHandoff(next.Handoff)
		l.log.Info("handoff settings changed", "enabled", next.Handoff.On(), "max_overlap", next.Handoff.MaxOverlap, "settle", next.Handoff.Settle)
	}
	if !usesPods(next) && !usesPods(prev) {
		if cs := staticCollectors(next); !reflect.DeepEqual(cs, l.collectors) {
			l.setCollectors(cs)
		}
	}
	for key, changed := range map[string]bool{
		"listen_addr":                 next.ListenAddr != prev.ListenAddr,
		"https":                       next.HTTPS != prev.HTTPS,
		"filter_strategy":             next.Discovery.FilterStrategy != prev.Discovery.FilterStrategy,
		"allow_insecure_auth_secrets": next.AllowInsecureAuthSecrets != prev.AllowInsecureAuthSecrets,
		"prometheus_cr":               !reflect.DeepEqual(next.Discovery.PrometheusCR, prev.Discovery.PrometheusCR),
		"collector_namespace/collector_selector/collector_not_ready_grace_period": usesPods(next) != usesPods(prev) ||
			(usesPods(next) && !reflect.DeepEqual(next.Discovery.Collector, prev.Discovery.Collector)),
		"kube_config_file_path": next.KubeConfigFilePath != prev.KubeConfigFilePath,
		"enable_pprof":          next.EnablePprof != prev.EnablePprof,
		"response_cache_bytes":  next.ResponseCacheBytes != prev.ResponseCacheBytes,
		"weights":               !reflect.DeepEqual(next.Weights, prev.Weights),
	} {
		if changed {
			l.log.Warn("config key changed; it takes effect after a restart", "key", key)
		}
	}
	l.cfg = next
	return nil
}

// usesPods reports whether collectors are discovered from pods: when there is
// no static list and a namespace or selector names them.
func usesPods(c *config) bool {
	cc := c.Discovery.Collector
	return len(cc.Collectors) == 0 && (cc.CollectorNamespace != "" || cc.CollectorSelector != nil)
}

// operatorNamespace is the namespace of the Prometheus object handed to
// prometheus-operator's generator, which a nil namespace selector selects:
// the allocator's own namespace ($OTELCOL_NAMESPACE, $POD_NAMESPACE or the
// service account's namespace file), else the collector namespace (outside
// a pod), else "default": the generator needs one.
func operatorNamespace(c *config, env environment) string {
	if ns := env.ownNamespace(); ns != "" {
		return ns
	}
	if ns := c.Discovery.Collector.CollectorNamespace; ns != "" {
		return ns
	}
	return "default"
}

// kubeConfigPath is the kubeconfig file in use: kube_config_file_path, else
// the first file of $KUBECONFIG, else none (in-cluster).
func kubeConfigPath(c *config) string {
	if c.KubeConfigFilePath != "" {
		return c.KubeConfigFilePath
	}
	if env := os.Getenv("KUBECONFIG"); env != "" {
		return filepath.SplitList(env)[0]
	}
	return ""
}

// kubeConfig loads the client configuration: the kubeconfig file in use,
// else the in-cluster service account.
func kubeConfig(c *config) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.KubeConfigFilePath
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes client config (kube_config_file_path, $KUBECONFIG or in-cluster): %w", err)
	}
	return rc, nil
}

// staticCollectors returns the configuration's static collector list, sorted
// by name (collector.Static: one conversion for both binaries' uses).
func staticCollectors(c *config) []allocation.Collector {
	return collector.Static(c.Discovery.Collector.Collectors)
}

// fileWatch configures watchFile.
type fileWatch struct {
	delay time.Duration // coalesces bursts of events
	poll  time.Duration // polling period when fsnotify fails
	err   error         // test hook: fail the fsnotify watch
}

// watchFile signals reload when the content of the file at path changed. It
// watches the directory, since Kubernetes updates mounted ConfigMaps by
// swapping a symlink (..data), and coalesces bursts of events over delay.
// Events of other files in the directory are ignored, and so is an event
// after which the file holds what it held: a log or any file written next to
// the config must not reload it (each reload logs, which, with the log in the
// same directory, reloaded again, four times a second). When the watch
// cannot be set up it polls the file's content instead: a missing inotify
// instance must not stop the allocator.
//
// loaded is the hash of the content the allocator loaded (config.sum): a
// change written before the watch was set up reloads at once.
func watchFile(ctx context.Context, log *slog.Logger, path string, fw fileWatch, loaded []byte, reload chan<- struct{}) error {
	w, err := newDirWatcher(filepath.Dir(path), fw.err)
	if err != nil {
		log.Warn("cannot watch the config file; polling it instead", "file", path, "interval", fw.poll, "err", err)
		return pollFile(ctx, log, path, fw.poll, loaded, reload)
	}
	defer w.Close()
	delay := fw.delay
	timer := time.NewTimer(0) // compare once now: the file may have changed since it was loaded
	name := filepath.Base(path)
	last := loaded
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-w.Errors:
			log.Warn("config file watcher", "err", err)
		case ev := <-w.Events:
			if base := filepath.Base(ev.Name); base == name || strings.HasPrefix(base, "..") {
				timer.Reset(delay)
			}
		case <-timer.C:
			cur := fileSum(log, path)
			if cur == nil || bytes.Equal(cur, last) {
				continue
			}
			last = cur
			select {
			case reload <- struct{}{}:
			default: // a reload is already pending
			}
		}
	}
}
