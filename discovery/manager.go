package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	promconfig "github.com/prometheus/prometheus/config"
	promdiscovery "github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/kubernetes"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	promrelabel "github.com/prometheus/prometheus/model/relabel"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/discovery/internal/metrics"
	"github.com/shardwise/shardwise/discovery/relabel"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

// Update is one change of the discovered state, sent on Manager.Updates.
// Its maps and slices are immutable once sent.
type Update struct {
	// ScrapeConfigs is the whole job set (file-configured jobs and
	// prometheus-operator-generated jobs) when it changed since the previous
	// Update, nil when it did not. The first Update always carries it.
	ScrapeConfigs map[string]*promconfig.ScrapeConfig
	// Targets holds the jobs whose target set changed, each with its complete
	// target set sorted by Hash; an empty slice means the job now has no
	// targets (or was removed). The first Update holds every job.
	Targets map[string][]*allocation.Target
	// Pending is the set of jobs of ScrapeConfigs (as last sent) whose
	// service discovery providers have not all reported yet and that have
	// no earlier targets to keep: they must not be served as empty. It is
	// complete in every Update (empty when none).
	Pending map[string]bool
}

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
	// Metrics is where the Manager and Prometheus' service discovery report;
	// nil registers on a private registry.
	Metrics *Metrics
	// FilterStrategy is allocatorconfig.FilterRelabelConfig (the default
	// when empty) or allocatorconfig.FilterNone.
	FilterStrategy string
	// CoalesceInterval is the least time between two Updates: bursts of
	// discovery changes within it become one Update. Zero means
	// DefaultCoalesceInterval.
	CoalesceInterval time.Duration
	// FirstSyncTimeout bounds how long the first Update waits for every
	// service discovery provider of every job to report once. After it the
	// first Update goes out with the jobs still waiting in Update.Pending, a
	// warning names them and shardwise_allocator_discovery_job_pending
	// stays 1 for each until its providers report. Zero means
	// DefaultFirstSyncTimeout.
	FirstSyncTimeout time.Duration
	// WaitForOperatorConfig holds the first Update until ApplyOperatorConfig
	// has been called once, so that the first Update includes
	// prometheus-operator jobs. This wait is not bounded by FirstSyncTimeout
	// (a first Update without those jobs would make collectors drop them);
	// a warning is logged every FirstSyncTimeout while it lasts. Set it when
	// prometheus_cr is enabled.
	WaitForOperatorConfig bool
	// KubeConfigFile, when set, is given to the kubernetes_sd configs that
	// prometheus-operator generates (they carry no API server), for runs
	// outside a cluster.
	KubeConfigFile string
}

// DefaultFirstSyncTimeout is the default of ManagerOptions.FirstSyncTimeout:
// long enough for a Kubernetes list of a large cluster or a slow http_sd
// endpoint, short enough that a provider that never answers (an unreachable
// http_sd server retries only every refresh_interval, 60s by default) does
// not keep the allocator unready. A job still waiting after it is not served
// empty: the server answers 503 for its targets until it reports.
const DefaultFirstSyncTimeout = 30 * time.Second

// Source names of scrape configs.
const (
	SourceFile     = metrics.SourceFile
	SourceOperator = metrics.SourceOperator
)

// DefaultCoalesceInterval is the default of ManagerOptions.CoalesceInterval.
const DefaultCoalesceInterval = time.Second

// Manager runs Prometheus service discovery for the union of file-configured
// and prometheus-operator-generated jobs, applies the relabel filter, and
// sends Updates. Its contract is in the package documentation.
type Manager struct {
	log      *slog.Logger
	metrics  *Metrics
	opts     ManagerOptions
	sd       *promdiscovery.Manager
	sdCancel context.CancelFunc
	updates  chan Update
	trigger  chan struct{} // capacity 1: the job set changed

	mu           sync.Mutex // guards the fields below
	fileJobs     map[string]*promconfig.ScrapeConfig
	operatorJobs map[string]*promconfig.ScrapeConfig
	jobs         map[string]*promconfig.ScrapeConfig // union, immutable once published
	jobsChanged  bool                                // jobs differs from what the filter has
	configured   bool                                // ApplyConfig or ApplyOperatorConfig was called
	operatorSet  bool                                // ApplyOperatorConfig was called
	syncedJobs   bool                                // service discovery reported since the job set last changed
	providers    map[string]promdiscovery.Configs    // service discovery configs per job, unwrapped
	labelUses    providerUses                        // labels each provider keeps
	failed       *failedProviders                    // providers that could not be created

	filter *relabel.Filter // owned by Run
}

// NewManager returns a Manager; call Run to start it.
func NewManager(opts ManagerOptions) (*Manager, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics == nil {
		m, err := NewMetrics(nil)
		if err != nil {
			return nil, err
		}
		opts.Metrics = m
	}
	if opts.CoalesceInterval <= 0 {
		opts.CoalesceInterval = DefaultCoalesceInterval
	}
	if opts.FirstSyncTimeout <= 0 {
		opts.FirstSyncTimeout = DefaultFirstSyncTimeout
	}
	switch opts.FilterStrategy {
	case "", allocatorconfig.FilterRelabelConfig, allocatorconfig.FilterNone:
	default:
		return nil, fmt.Errorf("%w: filter_strategy: unknown strategy %q", allocatorconfig.ErrConfig, opts.FilterStrategy)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sd := promdiscovery.NewManager(ctx, opts.Logger.With("component", "service-discovery"), opts.Metrics.reg, opts.Metrics.sd,
		promdiscovery.Updatert(opts.CoalesceInterval))
	if sd == nil {
		cancel()
		return nil, errors.New("create service discovery manager: metrics registration failed (one Manager per Metrics)")
	}
	return &Manager{
		log:          opts.Logger,
		metrics:      opts.Metrics,
		opts:         opts,
		sd:           sd,
		sdCancel:     cancel,
		updates:      make(chan Update),
		trigger:      make(chan struct{}, 1),
		fileJobs:     map[string]*promconfig.ScrapeConfig{},
		operatorJobs: map[string]*promconfig.ScrapeConfig{},
		jobs:         map[string]*promconfig.ScrapeConfig{},
		providers:    map[string]promdiscovery.Configs{},
		failed:       &failedProviders{},
		filter:       relabel.NewFilter(opts.FilterStrategy),
	}, nil
}

// Updates returns the channel of Updates. Run closes it when it returns.
func (m *Manager) Updates() <-chan Update { return m.updates }

// ScrapeConfigs returns the current job set: file-configured jobs and
// prometheus-operator jobs (a file job wins on a name clash). The map is
// immutable; it is empty before the first ApplyConfig.
func (m *Manager) ScrapeConfigs() map[string]*promconfig.ScrapeConfig {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.jobs
}

// ApplyConfig sets the file-configured jobs from the `config:` block; nil
// means none. The files of its scrape_config_files are read on every call
// (their globs are relative to the config file's directory once
// SetDirectory was called on cfg, as in Prometheus); a job name defined
// twice, in the block or across the files, is an error.
func (m *Manager) ApplyConfig(cfg *promconfig.Config) error {
	jobs := map[string]*promconfig.ScrapeConfig{}
	if cfg != nil {
		allocatorconfig.EnsureUTF8Names()
		scs, err := cfg.GetScrapeConfigs()
		if err != nil {
			m.metrics.configErrors.WithLabelValues(SourceFile).Inc()
			return fmt.Errorf("%w: config: %w", allocatorconfig.ErrConfig, err)
		}
		for _, sc := range scs {
			if _, dup := jobs[sc.JobName]; dup {
				m.metrics.configErrors.WithLabelValues(SourceFile).Inc()
				return fmt.Errorf("%w: config: duplicate job %q", allocatorconfig.ErrConfig, sc.JobName)
			}
			jobs[sc.JobName] = sc
		}
	}
	return m.apply(SourceFile, jobs)
}

// ApplyOperatorConfig sets the jobs generated from prometheus-operator
// resources. It is called by OperatorWatcher.
func (m *Manager) ApplyOperatorConfig(scs []*promconfig.ScrapeConfig) error {
	jobs := make(map[string]*promconfig.ScrapeConfig, len(scs))
	for _, sc := range scs {
		jobs[sc.JobName] = sc
	}
	return m.apply(SourceOperator, jobs)
}

func (m *Manager) apply(source string, jobs map[string]*promconfig.ScrapeConfig) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	file, op := m.fileJobs, m.operatorJobs
	if source == SourceFile {
		file = jobs
	} else {
		op = jobs
	}
	union := make(map[string]*promconfig.ScrapeConfig, len(file)+len(op))
	maps.Copy(union, op)
	for name, sc := range file {
		if _, clash := op[name]; clash {
			m.log.Warn("a file-configured job hides a prometheus-operator job of the same name", "job", name)
		}
		union[name] = sc
	}
	providers := make(map[string]promdiscovery.Configs, len(union))
	rules := make(map[string][]*promrelabel.Config, len(union))
	for name, sc := range union {
		cfgs := sc.ServiceDiscoveryConfigs
		if _, isOp := op[name]; isOp && m.opts.KubeConfigFile != "" {
			cfgs = withKubeConfig(cfgs, m.opts.KubeConfigFile)
		}
		providers[name] = cfgs
		rules[name] = sc.RelabelConfigs
	}
	uses, byKey := labelUses(rules, providers, m.labelUses)
	sdCfg := make(map[string]promdiscovery.Configs, len(union))
	for name, cfgs := range providers {
		sdCfg[name] = trackConfigs(cfgs, uses[name], m.failed)
	}
	if err := m.sd.ApplyConfig(sdCfg); err != nil {
		m.metrics.configErrors.WithLabelValues(source).Inc()
		return fmt.Errorf("apply service discovery config: %w", err)
	}
	m.fileJobs, m.operatorJobs = file, op
	m.providers = providers
	m.labelUses = byKey
	if !m.configured || !maps.EqualFunc(union, m.jobs, sameScrapeConfig) {
		m.jobs = union
		m.jobsChanged = true
	}
	m.configured = true
	if source == SourceOperator {
		m.operatorSet = true
	}
	m.syncedJobs = false
	select {
	case m.trigger <- struct{}{}:
	default:
	}
	return nil
}

// Run runs service discovery and sends Updates until ctx is done.
func (m *Manager) Run(ctx context.Context) error {
	defer close(m.updates)
	defer m.sdCancel()
	sdDone := make(chan error, 1)
	go func() { sdDone <- m.sd.Run() }()
	defer func() {
		m.sdCancel()
		if err := <-sdDone; err != nil && !errors.Is(err, context.Canceled) {
			m.log.Warn("service discovery manager stopped", "err", err)
		}
	}()

	var (
		snap       = &snapshot{kept: map[string][]*targetgroup.Group{}}
		sentFirst  bool
		timedOut   bool
		pending    *Update
		dirty      bool
		lastPass   time.Time
		timer      = time.NewTimer(m.opts.FirstSyncTimeout)
		firstTimer = timer.C
		coalesce   <-chan time.Time
	)
	defer timer.Stop()
	for {
		var (
			out  chan Update
			next Update
		)
		if pending != nil {
			out, next = m.updates, *pending
		}
		ready := sentFirst || m.readyForFirst(snap, timedOut)
		if dirty && ready && coalesce == nil {
			wait := m.opts.CoalesceInterval - time.Since(lastPass)
			if !sentFirst || wait <= 0 {
				pending = m.pass(snap, pending, !sentFirst)
				sentFirst, dirty, lastPass = true, false, time.Now()
				firstTimer = nil // the first update is out: no time-out to report
				continue
			}
			coalesce = time.After(wait)
		}
		select {
		case <-ctx.Done():
			return nil
		case g := <-m.sd.SyncCh():
			snap.set(g)
			dirty = true
			m.mu.Lock()
			m.syncedJobs = true
			m.mu.Unlock()
		case <-m.trigger:
			dirty = true
		case <-firstTimer:
			m.mu.Lock()
			waitOperator := !m.configured || (m.opts.WaitForOperatorConfig && !m.operatorSet)
			m.mu.Unlock()
			if waitOperator {
				m.log.Warn("still waiting for the first scrape configs (prometheus-operator resources or the config file); not ready", "waited", m.opts.FirstSyncTimeout)
				timer.Reset(m.opts.FirstSyncTimeout)
				continue
			}
			firstTimer, timedOut = nil, true
			m.log.Warn("service discovery providers did not all report in time; publishing the first update, the late jobs are not served until they report",
				"timeout", m.opts.FirstSyncTimeout, "jobs", m.undelivered(snap))
		case <-coalesce:
			coalesce = nil
			if dirty {
				pending = m.pass(snap, pending, false)
				dirty, lastPass = false, time.Now()
			}
		case out <- next:
			m.metrics.updates.Inc()
			pending = nil
		}
	}
}

// snapshot is Run's view of service discovery: the latest groups from
// Prometheus' manager without the synthetic groups, which providers of each
// job delivered, and the groups of each job when all its providers last had.
type snapshot struct {
	groups  map[string][]*targetgroup.Group
	synced  map[string]map[int]bool
	kept    map[string][]*targetgroup.Group
	pending map[string]bool // as last sent
}

func (s *snapshot) set(groups map[string][]*targetgroup.Group) {
	s.groups = make(map[string][]*targetgroup.Group, len(groups))
	s.synced = make(map[string]map[int]bool, len(groups))
	for job, tgs := range groups {
		s.groups[job], s.synced[job] = splitSynced(tgs)
	}
}

// delivered reports whether every provider of job, whose service discovery
// configs are cfgs, has delivered (or could not be created).
func (m *Manager) delivered(s *snapshot, job string, cfgs promdiscovery.Configs) bool {
	for i, c := range cfgs {
		if !s.synced[job][i] && !m.failed.has(c, i) {
			return false
		}
	}
	return true
}

// undelivered lists the jobs whose providers have not all delivered.
func (m *Manager) undelivered(s *snapshot) []string {
	m.mu.Lock()
	nprov := m.providers
	m.mu.Unlock()
	var out []string
	for job, cfgs := range nprov {
		if !m.delivered(s, job, cfgs) {
			out = append(out, job)
		}
	}
	slices.Sort(out)
	return out
}

// readyForFirst reports whether the first Update may be sent: the job set is
// known (including prometheus-operator jobs when waited for) and, unless
// FirstSyncTimeout passed, every provider of every job has delivered in a
// snapshot taken since the job set last changed.
func (m *Manager) readyForFirst(s *snapshot, timedOut bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.configured || (m.opts.WaitForOperatorConfig && !m.operatorSet) {
		return false
	}
	if len(m.jobs) == 0 || timedOut {
		return true
	}
	if !m.syncedJobs {
		return false
	}
	for job, cfgs := range m.providers {
		if !m.delivered(s, job, cfgs) {
			return false
		}
	}
	return true
}

// pass runs the filter and merges its result into pending. A job whose
// providers have not all delivered is given its kept groups, or is pending
// when it has none.
func (m *Manager) pass(s *snapshot, pending *Update, first bool) *Update {
	start := time.Now()
	m.mu.Lock()
	jobs, changed, nprov := m.jobs, m.jobsChanged, m.providers
	m.jobsChanged = false
	m.mu.Unlock()
	if changed {
		m.filter.ApplyConfig(jobs)
	}
	groups := make(map[string][]*targetgroup.Group, len(jobs))
	waiting := map[string]bool{}
	for name := range jobs {
		switch kept, ok := s.kept[name]; {
		case m.delivered(s, name, nprov[name]):
			groups[name] = s.groups[name]
			s.kept[name] = s.groups[name]
		case ok:
			groups[name] = kept
		default:
			waiting[name] = true
		}
	}
	for name := range s.kept {
		if _, ok := jobs[name]; !ok {
			delete(s.kept, name)
		}
	}
	for name := range s.pending {
		if !waiting[name] {
			m.metrics.jobPending.DeleteLabelValues(name)
		}
	}
	for name := range waiting {
		m.metrics.jobPending.WithLabelValues(name).Set(1)
	}
	pendingChanged := !maps.Equal(waiting, s.pending)
	s.pending = waiting

	targets := m.filter.Process(groups)
	if first {
		for name := range jobs {
			if _, ok := targets[name]; !ok {
				targets[name] = m.filter.Targets(name)
				if targets[name] == nil {
					targets[name] = []*allocation.Target{}
				}
			}
		}
	}
	for name, ts := range targets {
		if _, ok := jobs[name]; ok {
			m.metrics.targets.WithLabelValues(name).Set(float64(len(ts)))
		} else {
			m.metrics.targets.DeleteLabelValues(name)
		}
	}
	m.metrics.passDuration.Observe(time.Since(start).Seconds())
	if len(targets) == 0 && !changed && !first && !pendingChanged {
		if pending != nil {
			pending.Pending = waiting
		}
		return pending
	}
	if pending == nil {
		pending = &Update{Targets: map[string][]*allocation.Target{}}
	}
	maps.Copy(pending.Targets, targets)
	if changed || first {
		pending.ScrapeConfigs = jobs
	}
	pending.Pending = waiting
	m.log.Debug("discovery pass", "changed_jobs", len(targets), "pending_jobs", len(waiting), "duration", time.Since(start))
	return pending
}

// withKubeConfig returns the configs with kubeconfig set on kubernetes_sd
// configs that name no API server. It copies them: the served scrape configs
// must not carry a path of this machine.
func withKubeConfig(cfgs promdiscovery.Configs, path string) promdiscovery.Configs {
	out := make(promdiscovery.Configs, len(cfgs))
	for i, c := range cfgs {
		out[i] = c
		if k, ok := c.(*kubernetes.SDConfig); ok && k.APIServer.URL == nil && k.KubeConfig == "" {
			cp := *k
			cp.KubeConfig = path
			out[i] = &cp
		}
	}
	return out
}

// sameScrapeConfig compares two scrape configs, secrets included (their YAML
// form would hide them).
func sameScrapeConfig(a, b *promconfig.ScrapeConfig) bool {
	return a == b || reflect.DeepEqual(a, b)
}
