// Package informer is the informer plumbing the prometheus-operator watcher
// and the collector watcher share: it records an informer's list and watch
// errors, waits a bounded time for a first list, and reports each resource
// (shardwise_allocator_informer_synced, see discovery/internal/metrics).
package informer

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/cache"
)

// DefaultSyncTimeout is how long a watcher waits for an informer's first
// list before it reports the resource (a log line naming it and its last
// error, shardwise_allocator_informer_synced{resource} 0) and goes on: the
// operator watcher generates without the kinds it cannot list (RBAC forbids
// listing Probes, say), the collector watcher keeps waiting, since collectors
// cannot be guessed. A list forbidden by RBAC never succeeds; a slow API
// server usually answers well within it.
const DefaultSyncTimeout = 15 * time.Second

// Watched is an informer and the last error of its list or watch.
type Watched struct {
	resource string
	inf      cache.SharedInformer
	lastErr  atomic.Pointer[string]
}

// Watch records inf's list and watch errors; call it before the informer
// starts.
func Watch(resource string, inf cache.SharedInformer) *Watched {
	w := &Watched{resource: resource, inf: inf}
	// The error only fails on a started informer, which callers rule out.
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		msg := err.Error()
		w.lastErr.Store(&msg)
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	return w
}

// LastError is the informer's last list or watch error, "" when none.
func (w *Watched) LastError() string {
	if p := w.lastErr.Load(); p != nil {
		return *p
	}
	return ""
}

// WaitSynced waits until every informer has synced or timeout has passed.
// It returns those that have not synced, and false when ctx ended.
func WaitSynced(ctx context.Context, timeout time.Duration, ws []*Watched) ([]*Watched, bool) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fns := make([]cache.InformerSynced, len(ws))
	for i, w := range ws {
		fns[i] = w.inf.HasSynced
	}
	cache.WaitForCacheSync(tctx.Done(), fns...)
	if ctx.Err() != nil {
		return nil, false
	}
	var late []*Watched
	for _, w := range ws {
		if !w.inf.HasSynced() {
			late = append(late, w)
		}
	}
	return late, true
}

// ReportSynced sets synced{resource} for each informer (synced may be nil)
// and logs those not synced.
func ReportSynced(log *slog.Logger, synced *prometheus.GaugeVec, ws []*Watched, msg string) {
	for _, w := range ws {
		ok := w.inf.HasSynced()
		if synced != nil {
			synced.WithLabelValues(w.resource).Set(BoolFloat(ok))
		}
		if !ok {
			log.Error(msg, "resource", w.resource, "err", w.LastError())
		}
	}
}

// BoolFloat is 1 for true and 0 for false, for gauges.
func BoolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
