// Added by shardwise (third_party/prometheus.sh; why: third_party/README.md).

package kubernetes

import (
	"context"

	"k8s.io/client-go/util/workqueue"

	"github.com/prometheus/prometheus/discovery/targetgroup"
)

// sendSynced sends the initial-sync marker once the role's queue is first
// drained after its informers synced, and reports whether it has been sent.
func sendSynced(ctx context.Context, ch chan<- []*targetgroup.Group, q *workqueue.Typed[string], sent bool) bool {
	if sent || q.Len() > 0 {
		return sent
	}
	select {
	case <-ctx.Done():
	case ch <- targetgroup.SyncedMarker():
	}
	return true
}

// joinSynced returns the channel n role discoverers send to: it forwards
// their groups to ch and one marker once all n have sent theirs.
func joinSynced(ctx context.Context, ch chan<- []*targetgroup.Group, n int) chan<- []*targetgroup.Group {
	if n <= 1 {
		return ch
	}
	in := make(chan []*targetgroup.Group)
	go func() {
		left := n
		for {
			select {
			case <-ctx.Done():
				return
			case tgs := <-in:
				if targetgroup.IsSyncedMarker(tgs) {
					if left--; left != 0 {
						continue
					}
				}
				select {
				case ch <- tgs:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return in
}
