package discovery

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
)

// StaticCollectors returns the collectors of a static list, sorted by name.
func StaticCollectors(list []StaticCollector) []allocation.Collector {
	out := make([]allocation.Collector, 0, len(list))
	for _, c := range list {
		out = append(out, allocation.Collector{Name: c.Name, Node: c.Node})
	}
	slices.SortFunc(out, func(a, b allocation.Collector) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// CollectorWatcherOptions configure a CollectorWatcher.
type CollectorWatcherOptions struct {
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
	// Metrics receives the collector gauges; nil means none.
	Metrics *Metrics
	// Namespace and Selector select the collector pods; a nil Selector
	// selects every pod of the namespace.
	Namespace string
	Selector  *metav1.LabelSelector
	// GracePeriod is how long a pod may be not ready and keep receiving
	// targets. Zero means DefaultCollectorNotReadyGracePeriod.
	GracePeriod time.Duration
}

// CollectorWatcher watches the collector pods and sends the collector set.
//
// Contracts: Run may be called once; it returns nil when ctx is done, or an
// error when the pod cache cannot sync, and closes the Updates channel when it
// returns. The first value is the set once the pod cache has synced; each
// later value is the whole set after a change (a pod became ready, passed its
// grace period, was deleted or is terminating). A slow consumer gets the
// latest set; intermediate ones are skipped. Sets are sorted by name and
// immutable.
//
// A pod counts as a collector when it is not terminating, has not finished,
// and is ready or has been not ready for less than the grace period (since
// its Ready condition last changed, or since its creation when it has none).
type CollectorWatcher struct {
	log     *slog.Logger
	metrics *Metrics
	opts    CollectorWatcherOptions
	client  kubernetes.Interface
	sel     labels.Selector
	updates chan []allocation.Collector
}

// NewCollectorWatcher returns a CollectorWatcher over client.
func NewCollectorWatcher(client kubernetes.Interface, opts CollectorWatcherOptions) (*CollectorWatcher, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.GracePeriod <= 0 {
		opts.GracePeriod = DefaultCollectorNotReadyGracePeriod
	}
	sel := labels.Everything()
	if opts.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(opts.Selector)
		if err != nil {
			return nil, fmt.Errorf("%w: collector_selector: %w", ErrConfig, err)
		}
		sel = s
	}
	return &CollectorWatcher{
		log:     opts.Logger,
		metrics: opts.Metrics,
		opts:    opts,
		client:  client,
		sel:     sel,
		updates: make(chan []allocation.Collector),
	}, nil
}

// Updates returns the channel of collector sets. Run closes it.
func (w *CollectorWatcher) Updates() <-chan []allocation.Collector { return w.updates }

// Run watches the pods until ctx is done.
func (w *CollectorWatcher) Run(ctx context.Context) error {
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
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("sync collector pod cache in namespace %q", w.opts.Namespace)
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
func (w *CollectorWatcher) loop(ctx context.Context, trigger <-chan struct{}, list func() []*corev1.Pod) {
	var (
		current []allocation.Collector
		pending []allocation.Collector
		sent    bool
		hasNew  bool
		timer   *time.Timer
		expiry  <-chan time.Time
	)
	eval := func() {
		set, notReady, next := collectorsAt(time.Now(), list(), w.opts.GracePeriod)
		if timer != nil {
			timer.Stop()
			timer, expiry = nil, nil
		}
		if !next.IsZero() {
			timer = time.NewTimer(time.Until(next))
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

// collectorsAt returns the collectors among pods at now, sorted by name, the
// number of not-ready pods still within their grace period, and when the next
// of those expires (zero when none).
func collectorsAt(now time.Time, pods []*corev1.Pod, grace time.Duration) ([]allocation.Collector, int, time.Time) {
	out := make([]allocation.Collector, 0, len(pods))
	var (
		next     time.Time
		notReady int
	)
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		ready, since := podReady(p)
		if !ready {
			deadline := since.Add(grace)
			if !now.Before(deadline) {
				continue
			}
			notReady++
			if next.IsZero() || deadline.Before(next) {
				next = deadline
			}
		}
		out = append(out, allocation.Collector{Name: p.Name, Node: p.Spec.NodeName})
	}
	slices.SortFunc(out, func(a, b allocation.Collector) int { return cmp.Compare(a.Name, b.Name) })
	return out, notReady, next
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
