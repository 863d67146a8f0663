package operator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus-operator/prometheus-operator/pkg/assets"
	monitoringinformers "github.com/prometheus-operator/prometheus-operator/pkg/client/informers/externalversions"
	monitoringclient "github.com/prometheus-operator/prometheus-operator/pkg/client/versioned"
	promoperator "github.com/prometheus-operator/prometheus-operator/pkg/operator"
	"github.com/prometheus-operator/prometheus-operator/pkg/prometheus"
	prometheusclient "github.com/prometheus/client_golang/prometheus"
	promconfig "github.com/prometheus/prometheus/config"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/shardwise/shardwise/discovery/internal/informer"
	"github.com/shardwise/shardwise/discovery/internal/metrics"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

// Resource kinds watched by Watcher.
const (
	KindServiceMonitor = monitoringv1.ServiceMonitorsKind
	KindPodMonitor     = monitoringv1.PodMonitorsKind
	KindProbe          = monitoringv1.ProbesKind
	KindScrapeConfig   = monitoringv1alpha1.ScrapeConfigsKind
)

// ConfigSink receives the scrape configs generated from prometheus-operator
// resources: the whole job set each time. discovery.Manager implements it.
type ConfigSink interface {
	ApplyOperatorConfig(scs []*promconfig.ScrapeConfig) error
}

func init() {
	// prometheus-operator's pkg/operator, imported here, switches the global
	// label-name validation to the legacy scheme in its init, which has run
	// before this one.
	allocatorconfig.EnsureUTF8Names()
}

// WatcherOptions configure an Watcher.
type WatcherOptions struct {
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
	// Metrics receives the watcher's metrics; nil means a private registry.
	Metrics *Metrics
	// Config is the prometheus_cr block.
	Config allocatorconfig.PrometheusCRConfig
	// Namespace is the allocator's own namespace: the namespace of the
	// Prometheus object handed to prometheus-operator, which is what a nil
	// namespace selector selects.
	Namespace string
	// MinInterval is the least time between two generations. Zero means 1s.
	MinInterval time.Duration
	// SyncTimeout bounds the wait for the first list of namespaces and of
	// each kind; the first generation goes ahead without those not listed
	// by then (each is logged and shardwise_allocator_informer_synced is 0),
	// and a later one includes them once they are. Zero means
	// DefaultSyncTimeout.
	SyncTimeout time.Duration
}

// Watcher watches ServiceMonitors, PodMonitors, Probes and
// ScrapeConfigs and turns them into scrape configs with prometheus-operator's
// own resource selector and config generator, so job names and relabelings
// match prometheus-operator's. Secrets are re-read every CRDPollInterval;
// the contract is in the package documentation.
type Watcher struct {
	log     *slog.Logger
	metrics *Metrics
	opts    WatcherOptions
	kube    kubernetes.Interface
	mon     monitoringclient.Interface
	sink    ConfigSink
	prom    *monitoringv1.Prometheus
	gen     *prometheus.ConfigGenerator
	allowed func(ns string) bool
	// secretNS are the namespaces Secrets and ConfigMaps are read from; nil
	// means any (the referencing resource's own).
	secretNS map[string]bool
}

// NewWatcher returns an Watcher. It validates the
// configuration; it does not contact the API server.
func NewWatcher(kube kubernetes.Interface, mon monitoringclient.Interface, sink ConfigSink, opts WatcherOptions) (*Watcher, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	prom := prometheusObject(opts.Config, opts.Namespace)
	gen, err := prometheus.NewConfigGenerator(opts.Logger.With("component", "prometheus-operator"), prom,
		prometheus.WithEndpointSliceSupport(), prometheus.WithInlineTLSConfig())
	if err != nil {
		return nil, fmt.Errorf("%w: prometheus_cr: %w", allocatorconfig.ErrConfig, err)
	}
	cr := opts.Config
	allow, deny := nsSet(cr.AllowNamespaces), nsSet(cr.DenyNamespaces)
	// Without secret_namespaces, a resource's Secrets and ConfigMaps are read
	// from its own namespace, as prometheus-operator does (its store reads
	// them from the namespace of the resource that references them).
	var secretNS map[string]bool
	if len(cr.SecretNamespaces) > 0 {
		secretNS = nsSet(cr.SecretNamespaces)
	}
	return &Watcher{
		log:     opts.Logger,
		metrics: opts.Metrics,
		opts:    opts,
		kube:    kube,
		mon:     mon,
		sink:    sink,
		prom:    prom,
		gen:     gen,
		allowed: func(ns string) bool {
			return !deny[ns] && (len(allow) == 0 || allow[ns])
		},
		secretNS: secretNS,
	}, nil
}

// withDefaults fills in the zero options and validates the prometheus_cr
// block.
func (opts WatcherOptions) withDefaults() (WatcherOptions, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics == nil {
		m, err := NewMetrics(nil)
		if err != nil {
			return opts, err
		}
		opts.Metrics = m
	}
	if opts.MinInterval <= 0 {
		opts.MinInterval = time.Second
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = DefaultSyncTimeout
	}
	if opts.Namespace == "" {
		// prometheus-operator's generator panics on an empty namespace.
		return opts, fmt.Errorf("%w: prometheus_cr needs collector_namespace (the namespace of the Prometheus object handed to prometheus-operator's generator)", allocatorconfig.ErrConfig)
	}
	cr := opts.Config
	if err := cr.Validate(); err != nil {
		return opts, err
	}
	if cr.ScrapeInterval == 0 {
		cr.ScrapeInterval = allocatorconfig.DefaultCRScrapeInterval
	}
	if cr.CRDPollInterval <= 0 {
		cr.CRDPollInterval = 30 * time.Second
	}
	opts.Config = cr
	return opts, nil
}

// prometheusObject is the Prometheus object handed to prometheus-operator's
// selector and generator: the prometheus_cr block in its terms.
func prometheusObject(cr allocatorconfig.PrometheusCRConfig, namespace string) *monitoringv1.Prometheus {
	role := cr.ServiceDiscoveryRole
	if role == "" {
		role = monitoringv1.EndpointSliceRole
	}
	prom := &monitoringv1.Prometheus{
		TypeMeta:   metav1.TypeMeta{Kind: monitoringv1.PrometheusesKind, APIVersion: monitoringv1.SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{Name: "shardwise-allocator", Namespace: namespace},
		Spec: monitoringv1.PrometheusSpec{
			CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
				ScrapeInterval:                  monitoringv1.Duration(cr.ScrapeInterval.String()),
				ServiceMonitorSelector:          cr.ServiceMonitorSelector,
				ServiceMonitorNamespaceSelector: cr.ServiceMonitorNamespaceSelector,
				PodMonitorSelector:              cr.PodMonitorSelector,
				PodMonitorNamespaceSelector:     cr.PodMonitorNamespaceSelector,
				ProbeSelector:                   cr.ProbeSelector,
				ProbeNamespaceSelector:          cr.ProbeNamespaceSelector,
				ScrapeConfigSelector:            cr.ScrapeConfigSelector,
				ScrapeConfigNamespaceSelector:   cr.ScrapeConfigNamespaceSelector,
				ServiceDiscoveryRole:            &role,
				ScrapeProtocols:                 cr.ScrapeProtocols,
				ScrapeClasses:                   cr.ScrapeClasses,
				ArbitraryFSAccessThroughSMs:     monitoringv1.ArbitraryFSAccessThroughSMsConfig{Deny: cr.DenyFSAccessThroughSMs},
				// The multi-tenancy switches: the generator confines each
				// monitor's discovery to its own namespace, sets the
				// namespace label after the monitor's relabelings and caps
				// every job's limits.
				IgnoreNamespaceSelectors:      cr.IgnoreNamespaceSelectors,
				EnforcedNamespaceLabel:        cr.EnforcedNamespaceLabel,
				EnforcedSampleLimit:           limit(cr.EnforcedSampleLimit),
				EnforcedTargetLimit:           limit(cr.EnforcedTargetLimit),
				EnforcedLabelLimit:            limit(cr.EnforcedLabelLimit),
				EnforcedLabelNameLengthLimit:  limit(cr.EnforcedLabelNameLengthLimit),
				EnforcedLabelValueLengthLimit: limit(cr.EnforcedLabelValueLengthLimit),
				EnforcedBodySizeLimit:         monitoringv1.ByteSize(cr.EnforcedBodySizeLimit),
			},
		},
	}
	// The generator writes the evaluation interval into the global section,
	// which Prometheus' loader refuses when empty.
	eval := cr.EvaluationInterval
	if eval == 0 {
		eval = allocatorconfig.DefaultCRScrapeInterval
	}
	prom.Spec.EvaluationInterval = monitoringv1.Duration(eval.String())
	return prom
}

// nsSet is a set of namespace names.
func nsSet(names []string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, ns := range names {
		set[ns] = true
	}
	return set
}

// kindInfo describes one watched resource kind.
type kindInfo struct {
	kind     string
	gv       schema.GroupVersion
	resource string
	informer func(monitoringinformers.SharedInformerFactory) cache.SharedIndexInformer
}

var kinds = []kindInfo{
	{KindServiceMonitor, monitoringv1.SchemeGroupVersion, monitoringv1.ServiceMonitorName, func(f monitoringinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Monitoring().V1().ServiceMonitors().Informer()
	}},
	{KindPodMonitor, monitoringv1.SchemeGroupVersion, monitoringv1.PodMonitorName, func(f monitoringinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Monitoring().V1().PodMonitors().Informer()
	}},
	{KindProbe, monitoringv1.SchemeGroupVersion, monitoringv1.ProbeName, func(f monitoringinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Monitoring().V1().Probes().Informer()
	}},
	{KindScrapeConfig, monitoringv1alpha1.SchemeGroupVersion, monitoringv1alpha1.ScrapeConfigName, func(f monitoringinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Monitoring().V1alpha1().ScrapeConfigs().Informer()
	}},
}

// Run watches the resources until ctx is done.
func (w *Watcher) Run(ctx context.Context) error {
	r := &operatorRun{
		w:       w,
		trigger: make(chan struct{}, 1),
		stop:    make(chan struct{}),
		active:  map[string]kindInformers{},
	}
	defer r.shutdown()
	if err := r.watchNamespaces(); err != nil {
		return err
	}
	r.startRecorder(ctx)
	r.prepareGenerations()
	if _, _, err := r.newSelector(); err != nil {
		return err
	}
	r.createFactories()
	if _, err := r.startAvailable(); err != nil {
		return err
	}
	if !r.waitAll(ctx) {
		return nil // ctx is done
	}
	return r.loop(ctx)
}

// operatorRun is the state of one Watcher.Run: its informers, its
// event recorder and what each generation of scrape configs reads. Only
// Run's goroutine uses it, except the informers' event handlers, which only
// send on trigger.
type operatorRun struct {
	w *Watcher
	// trigger (capacity 1) says a generation is due.
	trigger chan struct{}
	// stop stops the informers; the factories' Shutdown waits for them,
	// so shutdowns run after it is closed.
	stop      chan struct{}
	shutdowns []func()

	nsInf    cache.SharedIndexInformer
	all      []*informer.Watched // every informer, for the sync reports
	recorder record.EventRecorder

	// Each generation gets a fresh asset store over these caches and its
	// own record of transient read errors (see prepareGenerations).
	opMetrics      *promoperator.Metrics
	transientErr   error
	secretCache    *objectCache[corev1.Secret]
	configMapCache *objectCache[corev1.ConfigMap]

	// factories are the informer factories, by namespace ("" for all);
	// active are the informers of the kinds whose CRD is served.
	factories map[string]monitoringinformers.SharedInformerFactory
	active    map[string]kindInformers
}

// notify asks for a generation without blocking: a pending one covers
// every change before it.
func (r *operatorRun) notify() {
	select {
	case r.trigger <- struct{}{}:
	default:
	}
}

// shutdown stops the informers and the event broadcaster.
func (r *operatorRun) shutdown() {
	close(r.stop)
	for _, f := range slices.Backward(r.shutdowns) {
		f()
	}
}

// watchNamespaces starts the namespace informer the namespace selectors
// read; only label changes trigger a generation.
func (r *operatorRun) watchNamespaces() error {
	nsFactory := k8sinformers.NewSharedInformerFactory(r.w.kube, 0)
	r.nsInf = nsFactory.Core().V1().Namespaces().Informer()
	r.all = []*informer.Watched{informer.Watch("Namespace", r.nsInf)}
	if _, err := r.nsInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { r.notify() },
		DeleteFunc: func(any) { r.notify() },
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*corev1.Namespace), newObj.(*corev1.Namespace)
			if !maps.Equal(o.Labels, n.Labels) {
				r.notify()
			}
		},
	}); err != nil {
		return fmt.Errorf("watch namespaces: %w", err)
	}
	nsFactory.Start(r.stop)
	r.shutdowns = append(r.shutdowns, nsFactory.Shutdown)
	return nil
}

// limit is a configured limit as prometheus-operator's CRD types take it
// (signed since v0.88); nil stays nil, and a value above the largest int64
// is that.
func limit(v *uint64) *int64 {
	if v == nil {
		return nil
	}
	return ptr.To(int64(min(*v, math.MaxInt64)))
}

// selectorRecorder is the event recorder prometheus-operator's resource
// selector takes: one per process, sending nothing to the API server, since
// its broadcaster, once started, cannot be stopped; reportRejected sends the
// selector's rejections as events on the Watcher's own recorder, which
// stops with it. (The broadcaster logs each event through klog.)
var selectorRecorder = sync.OnceValue(func() *promoperator.EventRecorder {
	return promoperator.NewEventRecorderFactory(false)(kubernetes.New(nil), "shardwise-allocator")(nil)
})

// startRecorder starts the recorder of events for rejected resources.
func (r *operatorRun) startRecorder(ctx context.Context) {
	scheme := runtime.NewScheme()
	_ = clientscheme.AddToScheme(scheme)
	_ = monitoringv1.AddToScheme(scheme)
	_ = monitoringv1alpha1.AddToScheme(scheme)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: r.w.kube.CoreV1().Events("")})
	r.shutdowns = append(r.shutdowns, broadcaster.Shutdown)
	r.recorder = broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "shardwise-allocator"})
}

// prepareGenerations sets up what every generation shares. Each generation
// gets a fresh asset store (prometheus-operator's store caches what it
// read) over our get cache, whose entries live one CRDPollInterval (see
// secretcache.go), so rotated Secrets are read again within it; and its own
// record of transient read errors.
func (r *operatorRun) prepareGenerations() {
	r.opMetrics = promoperator.NewMetrics(prometheusclient.NewRegistry())
	r.secretCache = newObjectCache[corev1.Secret](r.w.opts.Config.CRDPollInterval)
	r.configMapCache = newObjectCache[corev1.ConfigMap](r.w.opts.Config.CRDPollInterval)
}

// onTransient records the first transient read error of a generation.
func (r *operatorRun) onTransient(err error) {
	if r.transientErr == nil {
		r.transientErr = err
	}
}

// newSelector starts a generation: a fresh asset store and resource
// selector, and no transient error yet.
func (r *operatorRun) newSelector() (*prometheus.ResourceSelector, *assets.StoreBuilder, error) {
	w := r.w
	r.transientErr = nil
	store := assets.NewStoreBuilder(
		restrictedConfigMaps{w.kube.CoreV1(), restrictedReads[corev1.ConfigMap]{"configmap", w.secretNS, r.onTransient, r.configMapCache}},
		restrictedSecrets{w.kube.CoreV1(), restrictedReads[corev1.Secret]{"secret", w.secretNS, r.onTransient, r.secretCache}})
	sel, err := prometheus.NewResourceSelector(w.log.With("component", "prometheus-operator"), w.prom, store, r.nsInf, r.opMetrics, selectorRecorder())
	if err != nil {
		return nil, nil, fmt.Errorf("create prometheus-operator resource selector: %w", err)
	}
	return sel, store, nil
}

// createFactories creates the informer factories: with allow_namespaces,
// one per allowed namespace, so namespaced RBAC suffices for the resources;
// otherwise one for all.
func (r *operatorRun) createFactories() {
	w := r.w
	r.factories = map[string]monitoringinformers.SharedInformerFactory{}
	if len(w.opts.Config.AllowNamespaces) > 0 {
		for _, ns := range w.opts.Config.AllowNamespaces {
			r.factories[ns] = monitoringinformers.NewSharedInformerFactoryWithOptions(w.mon, 0, monitoringinformers.WithNamespace(ns))
		}
	} else {
		r.factories[metav1.NamespaceAll] = monitoringinformers.NewSharedInformerFactory(w.mon, 0)
	}
	for _, f := range r.factories {
		r.shutdowns = append(r.shutdowns, f.Shutdown)
	}
}

// startAvailable starts the informers of kinds whose CRD is now served.
func (r *operatorRun) startAvailable() (bool, error) {
	w := r.w
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { r.notify() },
		UpdateFunc: func(any, any) { r.notify() },
		DeleteFunc: func(any) { r.notify() },
	}
	started := false
	for _, k := range kinds {
		if r.active[k.kind] != nil {
			continue
		}
		ok, err := w.served(k)
		if err != nil {
			w.log.Warn("check CRD availability", "kind", k.kind, "err", err)
			continue
		}
		w.metrics.crdAvailable.WithLabelValues(k.kind).Set(informer.BoolFloat(ok))
		if !ok {
			continue
		}
		infs := kindInformers{}
		for ns, f := range r.factories {
			inf := k.informer(f)
			if _, err := inf.AddEventHandler(handler); err != nil {
				return false, fmt.Errorf("watch %s: %w", k.kind, err)
			}
			infs[ns] = inf
			name := k.kind
			if ns != metav1.NamespaceAll {
				name += "/" + ns
			}
			r.all = append(r.all, informer.Watch(name, inf))
		}
		r.active[k.kind] = infs
		started = true
		w.log.Info("watching prometheus-operator resources", "kind", k.kind)
	}
	for _, f := range r.factories {
		f.Start(r.stop)
	}
	return started, nil
}

// waitAll waits, bounded, for every informer's first list and reports
// those that cannot list: the generation goes ahead without them (one
// kind RBAC forbids must not hold back every job) and picks them up
// when they sync, since their events trigger a generation. It returns
// false when ctx is done.
func (r *operatorRun) waitAll(ctx context.Context) bool {
	if _, ok := informer.WaitSynced(ctx, r.w.opts.SyncTimeout, r.all); !ok {
		return false
	}
	informer.ReportSynced(r.w.log, r.w.metrics.informerSynced, r.all, "cannot list prometheus-operator resources or namespaces (RBAC?); generating scrape configs without them until they are listed")
	return true
}

// loop generates scrape configs when triggered, at most once per
// MinInterval, and polls for newly served kinds, until ctx is done.
func (r *operatorRun) loop(ctx context.Context) error {
	w := r.w
	poll := time.NewTicker(w.opts.Config.CRDPollInterval)
	defer poll.Stop()
	var (
		last     time.Time
		throttle <-chan time.Time
		pending  = true
	)
	for {
		if pending && throttle == nil {
			if wait := w.opts.MinInterval - time.Since(last); wait > 0 {
				throttle = time.After(wait)
			} else {
				if selector, store, err := r.newSelector(); err != nil {
					w.log.Error("generate scrape configs", "err", err)
				} else {
					w.generate(ctx, selector, store, r.active, r.recorder, &r.transientErr)
				}
				pending, last = false, time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.trigger:
			pending = true
		case <-throttle:
			throttle = nil
		case <-poll.C:
			started, err := r.startAvailable()
			if err != nil {
				return err
			}
			if started {
				if !r.waitAll(ctx) {
					return nil
				}
			} else {
				informer.ReportSynced(w.log, w.metrics.informerSynced, r.all, "still cannot list prometheus-operator resources or namespaces (RBAC?)")
			}
			pending = true
		}
	}
}

// kindInformers are the informers of one kind, by namespace ("" for all).
type kindInformers map[string]cache.SharedIndexInformer

// served reports whether the API server serves the kind.
func (w *Watcher) served(k kindInfo) (bool, error) {
	list, err := w.kube.Discovery().ServerResourcesForGroupVersion(k.gv.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == k.resource {
			return true, nil
		}
	}
	return false, nil
}

// generate selects the resources, generates the scrape configs and hands
// them to the sink. On error it keeps the previous set.
func (w *Watcher) generate(ctx context.Context, sel *prometheus.ResourceSelector, store *assets.StoreBuilder, active map[string]kindInformers, rec record.EventRecorder, transient *error) {
	scs, err := w.generateConfigs(ctx, sel, store, active, rec)
	if err == nil && *transient != nil {
		err = fmt.Errorf("read referenced secrets and configmaps: %w", *transient)
	}
	if err == nil {
		err = w.sink.ApplyOperatorConfig(scs)
	}
	if err != nil {
		w.metrics.configErrors.WithLabelValues(metrics.SourceOperator).Inc()
		w.log.Error("generate scrape configs from prometheus-operator resources; keeping the previous ones", "err", err)
		return
	}
	w.metrics.generations.Inc()
	w.log.Debug("generated scrape configs from prometheus-operator resources", "jobs", len(scs))
}

// generateConfigs selects the resources and generates their scrape configs.
// A resource whose job Prometheus refuses is left out, counted in
// shardwise_allocator_invalid_resources and, when rec is not nil, given a
// Warning event.
func (w *Watcher) generateConfigs(ctx context.Context, sel *prometheus.ResourceSelector, store *assets.StoreBuilder, active map[string]kindInformers, rec record.EventRecorder) (scs []*promconfig.ScrapeConfig, err error) {
	// prometheus-operator's generator panics on some inputs; a resource must
	// never take the allocator down, so a panic fails this generation only.
	defer func() {
		if r := recover(); r != nil {
			scs, err = nil, fmt.Errorf("prometheus-operator's config generator panicked: %v", r)
		}
	}()
	valid, invalid, err := w.selectResources(ctx, sel, active, rec)
	if err != nil {
		return nil, err
	}
	valid.sc = w.allowedSDs(valid.sc, rec, invalid)
	// The scrape classes' TLS Secrets and ConfigMaps live in the Prometheus
	// object's namespace, ours; prometheus-operator adds them to the store
	// before generating and fails the configuration when one cannot be read.
	if err := prometheus.AddScrapeClassesToStore(ctx, store, w.prom.Namespace, w.prom.Spec.ScrapeClasses); err != nil {
		return nil, fmt.Errorf("read the scrape classes' TLS assets: %w", err)
	}
	defer func() {
		for kind, n := range invalid {
			w.metrics.invalidResource.WithLabelValues(kind).Set(float64(n))
		}
	}()
	cfg, err := w.load(store, valid)
	if err == nil {
		return cfg.ScrapeConfigs, nil
	}
	// A resource prometheus-operator accepts but whose job Prometheus
	// refuses (a value its CRD schema would refuse, under an older or edited
	// CRD) must fail alone: keep the resources whose jobs load on their own.
	w.log.Warn("the generated configuration does not load; generating each resource alone to leave out the ones that fail", "err", err)
	kept, rejected := w.loadEach(store, valid, rec, invalid)
	if rejected == 0 {
		return nil, err // not one resource's doing
	}
	cfg, err = w.load(store, kept)
	if err != nil {
		return nil, err
	}
	return cfg.ScrapeConfigs, nil
}

// allowedSDs returns the ScrapeConfigs of scs that use only the
// service-discovery kinds of scrape_config_allowed_sds (all of them when it
// is empty); each other one is counted in invalid, logged and, when rec is
// not nil, given a Warning event. prometheus-operator has no such switch.
func (w *Watcher) allowedSDs(scs map[string]*monitoringv1alpha1.ScrapeConfig, rec record.EventRecorder, invalid map[string]int) map[string]*monitoringv1alpha1.ScrapeConfig {
	allowed := w.opts.Config.ScrapeConfigAllowedSDs
	if len(allowed) == 0 {
		return scs
	}
	out := make(map[string]*monitoringv1alpha1.ScrapeConfig, len(scs))
	for k, sc := range scs {
		var refused []string
		for _, kind := range scrapeConfigSDs(sc) {
			if !slices.Contains(allowed, kind) {
				refused = append(refused, kind)
			}
		}
		if len(refused) == 0 {
			out[k] = sc
			continue
		}
		invalid[KindScrapeConfig]++
		w.log.Warn("resource left out: it uses service discovery that prometheus_cr.scrape_config_allowed_sds does not allow", "kind", KindScrapeConfig, "resource", k, "sd", refused)
		if rec != nil {
			rec.Eventf(sc, corev1.EventTypeWarning, "ServiceDiscoveryNotAllowed", "left out by the shardwise allocator: service discovery %v is not among the allowed %v", refused, allowed)
		}
	}
	return out
}

// scrapeConfigSDs are the service-discovery kinds sc uses, as
// scrape_config_allowed_sds names them (allocatorconfig.ScrapeConfigSDKinds):
// the JSON name of each non-empty field of its spec ending in SDConfigs
// (or staticConfigs), without that suffix.
func scrapeConfigSDs(sc *monitoringv1alpha1.ScrapeConfig) []string {
	var kinds []string
	v := reflect.ValueOf(sc.Spec)
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		kind, ok := strings.CutSuffix(name, "SDConfigs")
		if !ok {
			kind, ok = strings.CutSuffix(name, "Configs")
			ok = ok && kind == "static"
		}
		if ok && v.Field(i).Kind() == reflect.Slice && v.Field(i).Len() > 0 {
			kinds = append(kinds, kind)
		}
	}
	return kinds
}

// resources are prometheus-operator resources by namespace/name key, as its
// generator takes them.
type resources struct {
	sm map[string]*monitoringv1.ServiceMonitor
	pm map[string]*monitoringv1.PodMonitor
	pr map[string]*monitoringv1.Probe
	sc map[string]*monitoringv1alpha1.ScrapeConfig
}

// selectResources returns the resources prometheus-operator's selector
// selects and finds valid, and the number it finds invalid per kind; each
// invalid one gets a Warning event on rec.
func (w *Watcher) selectResources(ctx context.Context, sel *prometheus.ResourceSelector, active map[string]kindInformers, rec record.EventRecorder) (resources, map[string]int, error) {
	sms, err := sel.SelectServiceMonitors(ctx, w.lister(active[KindServiceMonitor]))
	if err != nil {
		return resources{}, nil, fmt.Errorf("select service monitors: %w", err)
	}
	pms, err := sel.SelectPodMonitors(ctx, w.lister(active[KindPodMonitor]))
	if err != nil {
		return resources{}, nil, fmt.Errorf("select pod monitors: %w", err)
	}
	probes, err := sel.SelectProbes(ctx, w.lister(active[KindProbe]))
	if err != nil {
		return resources{}, nil, fmt.Errorf("select probes: %w", err)
	}
	scrapeCfgs, err := sel.SelectScrapeConfigs(ctx, w.lister(active[KindScrapeConfig]))
	if err != nil {
		return resources{}, nil, fmt.Errorf("select scrape configs: %w", err)
	}
	// Invalid by prometheus-operator's checks, plus (loadEach) those whose
	// job Prometheus refuses.
	invalid := map[string]int{
		KindServiceMonitor: reportRejected(sms, rec),
		KindPodMonitor:     reportRejected(pms, rec),
		KindProbe:          reportRejected(probes, rec),
		KindScrapeConfig:   reportRejected(scrapeCfgs, rec),
	}
	return resources{sms.ValidResources(), pms.ValidResources(), probes.ValidResources(), scrapeCfgs.ValidResources()}, invalid, nil
}

// reportRejected gives each resource prometheus-operator's selector
// rejected a Warning event with its reason, and returns how many there are.
// (The selector's own recorder, selectorRecorder, emits nothing.)
func reportRejected[T promoperator.ConfigurationResource](sel promoperator.TypedResourcesSelection[T], rec record.EventRecorder) int {
	n := 0
	for _, r := range sel {
		for _, c := range r.Conditions() {
			if c.Type != monitoringv1.Accepted || c.Status != monitoringv1.ConditionFalse {
				continue
			}
			n++
			if rec != nil {
				rec.Eventf(any(r.Resource()).(runtime.Object), corev1.EventTypeWarning, promoperator.InvalidConfigurationEvent,
					"left out by the shardwise allocator: prometheus-operator rejects it: %s", c.Message)
			}
		}
	}
	return n
}

// lister lists one kind's resources of a namespace from its informers (one
// per namespace, or one for all), nothing from a namespace not allowed or
// when the kind's CRD is not installed.
func (w *Watcher) lister(infs kindInformers) prometheus.ListAllByNamespaceFn {
	return func(ns string, s labels.Selector, fn cache.AppendFunc) error {
		if !w.allowed(ns) {
			return nil
		}
		inf := infs[ns]
		if inf == nil {
			inf = infs[metav1.NamespaceAll]
		}
		if inf == nil {
			return nil // the kind's CRD is not installed
		}
		return cache.ListAllByNamespace(inf.GetIndexer(), ns, s, fn)
	}
}

// load generates the configuration of r and loads it with Prometheus' loader.
func (w *Watcher) load(store *assets.StoreBuilder, r resources) (*promconfig.Config, error) {
	b, err := w.gen.GenerateServerConfiguration(w.prom, r.sm, r.pm, r.pr, r.sc, store, nil, nil, nil, []string{})
	if err != nil {
		return nil, fmt.Errorf("generate configuration: %w", err)
	}
	cfg, err := allocatorconfig.LoadPromConfig(b)
	if err != nil {
		return nil, fmt.Errorf("load generated configuration: %w", err)
	}
	return cfg, nil
}

// loadEach keeps the resources of r whose configuration loads alone; each
// other one is counted in invalid, logged and given a Warning event. It
// returns the kept resources and how many were left out.
func (w *Watcher) loadEach(store *assets.StoreBuilder, r resources, rec record.EventRecorder, invalid map[string]int) (resources, int) {
	rejected := 0
	reject := func(kind, key string, obj runtime.Object, err error) {
		rejected++
		invalid[kind]++
		w.log.Warn("resource left out: Prometheus refuses its scrape config", "kind", kind, "resource", key, "err", err)
		if rec != nil {
			rec.Eventf(obj, corev1.EventTypeWarning, "InvalidConfiguration", "left out by the shardwise allocator: Prometheus refuses its scrape config: %v", err)
		}
	}
	loads := func(one resources) error {
		_, err := w.load(store, one)
		return err
	}
	kept := resources{
		sm: keepLoading(KindServiceMonitor, r.sm, func(k string, v *monitoringv1.ServiceMonitor) error {
			return loads(resources{sm: map[string]*monitoringv1.ServiceMonitor{k: v}})
		}, reject),
		pm: keepLoading(KindPodMonitor, r.pm, func(k string, v *monitoringv1.PodMonitor) error {
			return loads(resources{pm: map[string]*monitoringv1.PodMonitor{k: v}})
		}, reject),
		pr: keepLoading(KindProbe, r.pr, func(k string, v *monitoringv1.Probe) error {
			return loads(resources{pr: map[string]*monitoringv1.Probe{k: v}})
		}, reject),
		sc: keepLoading(KindScrapeConfig, r.sc, func(k string, v *monitoringv1alpha1.ScrapeConfig) error {
			return loads(resources{sc: map[string]*monitoringv1alpha1.ScrapeConfig{k: v}})
		}, reject),
	}
	return kept, rejected
}

// keepLoading returns the entries of in for which load succeeds, and calls
// reject for the others.
func keepLoading[T runtime.Object](kind string, in map[string]T, load func(string, T) error, reject func(kind, key string, obj runtime.Object, err error)) map[string]T {
	out := make(map[string]T, len(in))
	for k, v := range in {
		if err := load(k, v); err != nil {
			reject(kind, k, v, err)
			continue
		}
		out[k] = v
	}
	return out
}

// restrictedReads is how the asset store reads Secrets and ConfigMaps: only
// in the allowed namespaces (any when allowed is nil), through cache (when
// set), and reporting errors other than NotFound and Forbidden (the API
// server is unreachable, say) to transient, so that a generation which met
// one is discarded rather than published without the resources it rejected.
type restrictedReads[T any] struct {
	kind      string // "secret" or "configmap", for errors
	allowed   map[string]bool
	transient func(error)
	cache     *objectCache[T]
}

// get reads ns/name with fetch, under the rules above.
func (r restrictedReads[T]) get(ns, name string, fetch func() (*T, error)) (*T, error) {
	if r.allowed != nil && !r.allowed[ns] {
		return nil, errSecretNamespace(r.kind, ns, name)
	}
	var obj *T
	var err error
	if r.cache != nil {
		obj, err = r.cache.get(ns, name, fetch)
	} else {
		obj, err = fetch()
	}
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		r.transient(err)
	}
	return obj, err
}

// restrictedSecrets serves the asset store's Secret reads (it only calls
// Get, and does not modify what it gets) under restrictedReads' rules.
type restrictedSecrets struct {
	typedcorev1.SecretsGetter
	reads restrictedReads[corev1.Secret]
}

func (r restrictedSecrets) Secrets(ns string) typedcorev1.SecretInterface {
	if r.reads.allowed != nil && !r.reads.allowed[ns] {
		return secretsIn{ns: ns, reads: r.reads} // Get refuses before any read
	}
	return secretsIn{r.SecretsGetter.Secrets(ns), ns, r.reads}
}

type secretsIn struct {
	typedcorev1.SecretInterface
	ns    string
	reads restrictedReads[corev1.Secret]
}

func (s secretsIn) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error) {
	return s.reads.get(s.ns, name, func() (*corev1.Secret, error) { return s.SecretInterface.Get(ctx, name, opts) })
}

// restrictedConfigMaps is restrictedSecrets for ConfigMaps.
type restrictedConfigMaps struct {
	typedcorev1.ConfigMapsGetter
	reads restrictedReads[corev1.ConfigMap]
}

func (r restrictedConfigMaps) ConfigMaps(ns string) typedcorev1.ConfigMapInterface {
	if r.reads.allowed != nil && !r.reads.allowed[ns] {
		return configMapsIn{ns: ns, reads: r.reads}
	}
	return configMapsIn{r.ConfigMapsGetter.ConfigMaps(ns), ns, r.reads}
}

type configMapsIn struct {
	typedcorev1.ConfigMapInterface
	ns    string
	reads restrictedReads[corev1.ConfigMap]
}

func (c configMapsIn) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error) {
	return c.reads.get(c.ns, name, func() (*corev1.ConfigMap, error) { return c.ConfigMapInterface.Get(ctx, name, opts) })
}

// ErrSecretNamespace is returned for a Secret or ConfigMap outside
// prometheus_cr.secret_namespaces.
var ErrSecretNamespace = errors.New("namespace is not in prometheus_cr.secret_namespaces")

func errSecretNamespace(kind, ns, name string) error {
	return fmt.Errorf("read %s %s/%s: %w", kind, ns, name, ErrSecretNamespace)
}
