package collector

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/discovery/internal/informer"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

// Static returns the collectors of a static list, sorted by name.
func Static(list []allocatorconfig.StaticCollector) []allocation.Collector {
	out := make([]allocation.Collector, 0, len(list))
	for _, c := range list {
		out = append(out, allocation.Collector{Name: c.Name, Node: c.Node})
	}
	slices.SortFunc(out, func(a, b allocation.Collector) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// WatcherOptions configure a Watcher.
type WatcherOptions struct {
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
	// Metrics receives the collector gauges; nil means none.
	Metrics *Metrics
	// Namespace and Selector select the collector pods; a nil Selector
	// selects every pod of the namespace.
	Namespace string
	Selector  *metav1.LabelSelector
	// GracePeriod is how long a pod may be not ready and keep receiving
	// targets. Zero means allocatorconfig.DefaultCollectorNotReadyGracePeriod.
	GracePeriod time.Duration
	// DrainTerminating makes a collector whose pod is terminating leave the
	// set at once as a draining collector (allocation.Collector.Draining)
	// instead of keeping its targets for the grace period: for the
	// allocator's handoff, which moves them while the pod still scrapes.
	DrainTerminating bool
	// SyncTimeout is how often a pod list that does not succeed (RBAC
	// forbids it, the API server does not answer) is reported while Run
	// keeps waiting for it. Zero means DefaultSyncTimeout.
	SyncTimeout time.Duration
}

// Watcher watches the collector pods and sends the collector set (a pod
// became ready, passed its grace period, was deleted or is terminating). Its
// contract is in the package documentation; membership follows collectorsAt.
type Watcher struct {
	log     *slog.Logger
	metrics *Metrics
	opts    WatcherOptions
	client  kubernetes.Interface
	sel     labels.Selector
	updates chan []allocation.Collector
}

// NewWatcher returns a Watcher over client.
func NewWatcher(client kubernetes.Interface, opts WatcherOptions) (*Watcher, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.GracePeriod <= 0 {
		opts.GracePeriod = allocatorconfig.DefaultCollectorNotReadyGracePeriod
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = DefaultSyncTimeout
	}
	sel := labels.Everything()
	if opts.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(opts.Selector)
		if err != nil {
			return nil, fmt.Errorf("%w: collector_selector: %w", allocatorconfig.ErrConfig, err)
		}
		sel = s
	}
	return &Watcher{
		log:     opts.Logger,
		metrics: opts.Metrics,
		opts:    opts,
		client:  client,
		sel:     sel,
		updates: make(chan []allocation.Collector),
	}, nil
}

// Updates returns the channel of collector sets. Run closes it.
func (w *Watcher) Updates() <-chan []allocation.Collector { return w.updates }

// Run watches the pods until ctx is done.
func (w *Watcher) Run(ctx context.Context) error {
	defer close(w.updates)
	factory := informers.NewSharedInformerFactoryWithOptions(w.client, 0,
		informers.WithNamespace(w.opts.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = w.sel.String() }))
	inf := factory.Core().V1().Pods()
	trigger := make(chan struct{}, 1)
	notify := func() {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}); err != nil {
		return fmt.Errorf("watch collector pods: %w", err)
	}
	lister := inf.Lister().Pods(w.opts.Namespace)
	pods := []*informer.Watched{informer.Watch("Pod", inf.Informer())}
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	for {
		late, ok := informer.WaitSynced(ctx, w.opts.SyncTimeout, pods)
		if !ok {
			return nil
		}
		informer.ReportSynced(w.log.With("namespace", w.opts.Namespace), w.metrics.synced(), pods,
			"cannot list collector pods (RBAC?); not ready until they are listed")
		if len(late) == 0 {
			break
		}
	}
	notify()
	w.loop(ctx, trigger, func() []*corev1.Pod {
		pods, err := lister.List(w.sel)
		if err != nil {
			w.log.Error("list collector pods", "err", err)
		}
		return pods
	})
	return nil
}

// loop re-evaluates the pods on every trigger and when a grace period ends,
// and sends the set when it changed.
func (w *Watcher) loop(ctx context.Context, trigger <-chan struct{}, list func() []*corev1.Pod) {
	var (
		current []allocation.Collector
		pending []allocation.Collector
		members map[string]member // nil until the first evaluation
		sent    bool
		hasNew  bool
		timer   *time.Timer
		expiry  <-chan time.Time
	)
	eval := func() {
		set, next, notReady, at := collectorsAt(time.Now(), list(), w.opts.GracePeriod, w.opts.DrainTerminating, members)
		members = next
		if timer != nil {
			timer.Stop()
			timer, expiry = nil, nil
		}
		if !at.IsZero() {
			timer = time.NewTimer(time.Until(at))
			expiry = timer.C
		}
		if w.metrics != nil {
			w.metrics.collectors.Set(float64(len(set)))
			w.metrics.notReady.Set(float64(notReady))
		}
		if !sent || !slices.Equal(set, current) {
			current, pending, hasNew = set, set, true
		}
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		var out chan []allocation.Collector
		if hasNew {
			out = w.updates
		}
		select {
		case <-ctx.Done():
			return
		case <-trigger:
			eval()
		case <-expiry:
			eval()
		case out <- pending:
			sent, hasNew = true, false
			w.log.Info("collectors changed", "collectors", len(pending))
		}
	}
}

// member is a collector of the set: its node and, when its pod is not ready
// (not ready, terminating, finished or gone), since when.
type member struct {
	node     string
	since    time.Time // zero while ready
	draining bool      // its pod is terminating and the rule drains
}

// collectorsAt returns the collectors at now, sorted by name, the members
// for the next call, the number of members not ready but within their grace
// period, and when the next of those expires (zero when none).
//
// A ready pod is a collector. A collector whose pod stops being ready, is
// terminating, has finished or is deleted stays one for the grace period, so
// a StatefulSet pod deleted and recreated under the same name (a rolling
// restart) keeps its targets and nothing moves. A pod that has never been a
// collector joins only once ready: a Pending replacement gets no targets it
// cannot scrape yet. On the first call (prev nil, the allocator starts), a
// live pod not ready for less than the grace period counts, since it may
// have been a collector of the previous allocator.
//
// With drain (the allocator's handoff is on), a collector whose pod is
// terminating leaves at once as a draining collector instead: its targets
// move while it still scrapes them, and the handoff serves it what it held
// until the new owners have them; once its pod is gone it is gone, with no
// grace period (it handed its targets off).
func collectorsAt(now time.Time, pods []*corev1.Pod, grace time.Duration, drain bool, prev map[string]member) ([]allocation.Collector, map[string]member, int, time.Time) {
	next := make(map[string]member, len(pods))
	seen := make(map[string]bool, len(pods))
	for _, p := range pods {
		seen[p.Name] = true
		live := p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
		ready, since := podReady(p)
		if live && ready {
			next[p.Name] = member{node: p.Spec.NodeName}
			continue
		}
		if old, ok := prev[p.Name]; ok && drain && p.DeletionTimestamp != nil {
			next[p.Name] = member{node: old.node, draining: true}
			continue
		}
		if old, ok := prev[p.Name]; ok {
			if old.since.IsZero() {
				old.since = now
			}
			if p.Spec.NodeName != "" {
				old.node = p.Spec.NodeName
			}
			next[p.Name] = old
			continue
		}
		if prev == nil && live {
			next[p.Name] = member{node: p.Spec.NodeName, since: since}
		}
	}
	for name, old := range prev {
		if _, ok := next[name]; ok {
			continue
		}
		if !seen[name] && !old.draining {
			// Deleted: it may return under the same name.
			if old.since.IsZero() {
				old.since = now
			}
			next[name] = old
		}
	}
	out := make([]allocation.Collector, 0, len(next))
	var (
		at       time.Time
		notReady int
	)
	for name, m := range next {
		if m.draining {
			out = append(out, allocation.Collector{Name: name, Node: m.node, Draining: true})
			continue
		}
		if !m.since.IsZero() {
			deadline := m.since.Add(grace)
			if !now.Before(deadline) {
				delete(next, name)
				continue
			}
			notReady++
			if at.IsZero() || deadline.Before(at) {
				at = deadline
			}
		}
		out = append(out, allocation.Collector{Name: name, Node: m.node})
	}
	slices.SortFunc(out, func(a, b allocation.Collector) int { return cmp.Compare(a.Name, b.Name) })
	return out, next, notReady, at
}

// podReady reports whether a pod is ready and, when it is not, since when.
func podReady(p *corev1.Pod) (bool, time.Time) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			if c.Status == corev1.ConditionTrue {
				return true, time.Time{}
			}
			if !c.LastTransitionTime.IsZero() {
				return false, c.LastTransitionTime.Time
			}
		}
	}
	return false, p.CreationTimestamp.Time
}

// Membership applies the Watcher's membership rule to successive
// pod lists, without an API server: for simulations and benchmarks of
// rolling restarts. The zero value has a grace period of zero.
type Membership struct {
	// Grace is the not-ready grace period.
	Grace time.Duration
	// Drain makes a terminating collector a draining one (collectorsAt).
	Drain   bool
	members map[string]member
}

// Observe returns the collectors given the pods at now; calls must come in
// time order.
func (m *Membership) Observe(now time.Time, pods []*corev1.Pod) []allocation.Collector {
	set, next, _, _ := collectorsAt(now, pods, m.Grace, m.Drain, m.members)
	m.members = next
	return set
}
