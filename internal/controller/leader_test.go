package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/testenv"
)

// replica is one operator replica of the leader-election test.
type replica struct {
	name   string
	mgr    ctrl.Manager
	log    *writeLog
	cancel context.CancelFunc
	done   chan struct{} // closed when the manager has stopped
}

// startReplica starts an operator replica electing a leader on a short lease.
// When killAt > 0, its killAt-th write is refused and the replica is stopped
// at once, without releasing its lease, as a killed process would be.
func startReplica(t *testing.T, ns, name string, killAt int64) *replica {
	t.Helper()
	scheme, err := controller.NewScheme()
	require.NoError(t, err)
	mgr := testenv.NewManager(t, testenv.Require(t, env), ctrl.Options{
		Scheme:                        scheme,
		Cache:                         testenv.CacheIn(ns),
		LeaderElection:                true,
		LeaderElectionID:              "shardwise-operator-" + ns,
		LeaderElectionNamespace:       ns,
		LeaderElectionReleaseOnCancel: false,
		LeaseDuration:                 ptr.To(2 * time.Second),
		RenewDeadline:                 ptr.To(1500 * time.Millisecond),
		RetryPeriod:                   ptr.To(200 * time.Millisecond),
	})
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{name: name, mgr: mgr, log: &writeLog{}, cancel: cancel, done: make(chan struct{})}
	var kill sync.Once
	wrap := func(c client.Client) client.Client {
		return r.log.wrap(c)
	}
	if killAt > 0 {
		r.log.failAt.Store(killAt)
	}
	mc := wrap(mgr.GetClient())
	if killAt > 0 {
		mc = killOnFault{Client: mc, kill: func() { kill.Do(cancel) }}
	}
	opts := controllerOptions(1)
	require.NoError(t, (&controller.CollectorReconciler{Client: mc, Scheme: scheme, Settings: settings}).SetupWithManager(mgr, opts))
	require.NoError(t, (&controller.TargetAllocatorReconciler{Client: mc, Scheme: scheme, Settings: settings}).SetupWithManager(mgr, opts))
	go func() {
		_ = mgr.Start(ctx)
		close(r.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// killOnFault stops the replica when a write fails with the injected fault.
type killOnFault struct {
	client.Client
	kill func()
}

func (k killOnFault) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	err := k.Client.Apply(ctx, obj, opts...)
	if err != nil && strings.Contains(err.Error(), errInjected.Error()) {
		k.kill()
	}
	return err
}

func elected(r *replica) bool {
	select {
	case <-r.mgr.Elected():
		return true
	default:
		return false
	}
}

// TestLeaderKilledMidReconcile runs two operator replicas with leader
// election. The leader is killed at its third write of the first reconcile
// (lease not released); the other replica takes over once the lease expires
// and converges. Then a user edits a label the operator owns, ten times: the
// operator puts it back each time, and writes the object no more than once per
// edit (no oscillation), and nothing once the user stops.
func TestLeaderKilledMidReconcile(t *testing.T) {
	t.Parallel()
	ns := "leader-election"
	h := start(t, ns)
	ctx := t.Context()
	// Two replicas; the first to win the lease will be killed mid-reconcile.
	a := startReplica(t, ns, "a", 3)
	eventually(t, waitFor, func() error {
		if !elected(a) {
			return fmt.Errorf("a not elected yet")
		}
		return nil
	})
	b := startReplica(t, ns, "b", 0)
	_, err := h.createYAML(t, ns, upstreamExample)
	require.NoError(t, err)
	killed := time.Now()
	select {
	case <-a.done:
		killed = time.Now()
	case <-time.After(waitFor):
		require.FailNow(t, "the leader was not killed")
	}
	eventually(t, waitFor, func() error {
		if !elected(b) {
			return fmt.Errorf("b not elected yet")
		}
		return nil
	})
	t.Logf("takeover: %s after the leader was killed (lease 2s, retry 200ms)", time.Since(killed).Round(10*time.Millisecond))
	require.GreaterOrEqual(t, len(a.log.snapshot()), 3, "the leader was killed at its third write")
	h.waitReady(t, ns, "collector-with-ta", metav1.ConditionTrue)

	// A user fights the operator over a field it owns.
	settle := func() { quiet(t, b.log) }
	settle()
	b.log.reset()
	svcWrites := func() int {
		n := 0
		for _, w := range b.log.snapshot() {
			if strings.HasSuffix(w, " collector-with-ta-collector-monitoring") {
				n++
			}
		}
		return n
	}
	const edits = 10
	for i := range edits {
		svc := corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "collector-with-ta-collector-monitoring"}}
		h.update(t, &svc, func() { svc.Labels[manifests.LabelPartOf] = fmt.Sprintf("user-%d", i) })
		eventually(t, waitFor, func() error {
			var again corev1.Service
			if err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: svc.Name}, &again); err != nil {
				return err
			}
			if v := again.Labels[manifests.LabelPartOf]; v != "opentelemetry" {
				return fmt.Errorf("label %s not put back yet", v)
			}
			return nil
		})
	}
	settle()
	writes := svcWrites()
	t.Logf("%d user edits, %d operator writes of the Service", edits, writes)
	require.Positive(t, writes)
	require.LessOrEqual(t, writes, edits+1, "no oscillation: at most one write per edit (one extra for an event seen late)")
}
