package discovery

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/cache"
)

// DefaultSyncTimeout is how long a watcher waits for an informer's first
// list before it reports the resource (a log line naming it and its last
// error, shardwise_allocator_informer_synced{resource} 0) and goes on: the
// OperatorWatcher generates without the kinds it cannot list (RBAC forbids
// listing Probes, say), the CollectorWatcher keeps waiting, since collectors
// cannot be guessed. A list forbidden by RBAC never succeeds; a slow API
// server usually answers well within it.
const DefaultSyncTimeout = 15 * time.Second

// watched is an informer and the last error of its list or watch.
type watched struct {
	resource string
	inf      cache.SharedInformer
	lastErr  atomic.Pointer[string]
}

// watchInformer records inf's list and watch errors; call it before the
// informer starts.
func watchInformer(resource string, inf cache.SharedInformer) *watched {
	w := &watched{resource: resource, inf: inf}
	// The error only fails on a started informer, which callers rule out.
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		msg := err.Error()
		w.lastErr.Store(&msg)
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	return w
}

// lastError is the informer's last list or watch error, "" when none.
func (w *watched) lastError() string {
	if p := w.lastErr.Load(); p != nil {
		return *p
	}
	return ""
}

// waitSynced waits until every informer has synced or timeout has passed.
// It returns those that have not synced, and false when ctx ended.
func waitSynced(ctx context.Context, timeout time.Duration, ws []*watched) ([]*watched, bool) {
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
	var late []*watched
	for _, w := range ws {
		if !w.inf.HasSynced() {
			late = append(late, w)
		}
	}
	return late, true
}

// reportSynced sets shardwise_allocator_informer_synced for each informer
// and logs those not synced.
func reportSynced(log *slog.Logger, m *Metrics, ws []*watched, msg string) {
	for _, w := range ws {
		synced := w.inf.HasSynced()
		if m != nil {
			m.informerSynced.WithLabelValues(w.resource).Set(boolFloat(synced))
		}
		if !synced {
			log.Error(msg, "resource", w.resource, "err", w.lastError())
		}
	}
}
