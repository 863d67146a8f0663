package discovery

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/internal/testenv"
)

func pod(name, node string, ready bool, since time.Time) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(since)},
		Spec:       corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{
			Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(since),
		}}},
	}
}

func names(cs []allocation.Collector) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestCollectorsAt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	terminating := pod("term", "n", true, now)
	terminating.DeletionTimestamp = &metav1.Time{Time: now}
	failed := pod("failed", "n", true, now)
	failed.Status.Phase = corev1.PodFailed
	neverReady := pod("new", "n", false, now.Add(-10*time.Second))
	neverReady.Status.Conditions = nil
	for _, tc := range []struct {
		name     string
		pods     []*corev1.Pod
		want     []string
		notReady int
		next     time.Time
	}{
		{"ready", []*corev1.Pod{pod("b", "n2", true, now), pod("a", "n1", true, now)}, []string{"a", "b"}, 0, time.Time{}},
		{"not ready within grace", []*corev1.Pod{pod("a", "n", false, now.Add(-29*time.Second))}, []string{"a"}, 1, now.Add(time.Second)},
		{"not ready past grace", []*corev1.Pod{pod("a", "n", false, now.Add(-30*time.Second))}, []string{}, 0, time.Time{}},
		{"terminating dropped at once", []*corev1.Pod{terminating}, []string{}, 0, time.Time{}},
		{"finished", []*corev1.Pod{failed}, []string{}, 0, time.Time{}},
		{"never ready counts from creation", []*corev1.Pod{neverReady}, []string{"new"}, 1, now.Add(20 * time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, notReady, next := collectorsAt(now, tc.pods, 30*time.Second)
			require.Equal(t, tc.want, names(got))
			require.Equal(t, tc.notReady, notReady)
			require.Equal(t, tc.next, next)
		})
	}
	got, _, _ := collectorsAt(now, []*corev1.Pod{pod("a", "node-1", true, now)}, time.Second)
	require.Equal(t, []allocation.Collector{{Name: "a", Node: "node-1"}}, got)
}

func TestStaticCollectors(t *testing.T) {
	t.Parallel()
	require.Equal(t, []allocation.Collector{{Name: "a"}, {Name: "b", Node: "n"}},
		StaticCollectors([]StaticCollector{{Name: "b", Node: "n"}, {Name: "a"}}))
}

// TestCollectorGracePeriod drives the watcher loop on a fake clock.
func TestCollectorGracePeriod(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var (
			mu   sync.Mutex
			pods = map[string]*corev1.Pod{}
		)
		set := func(ps ...*corev1.Pod) {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range ps {
				pods[p.Name] = p
			}
		}
		list := func() []*corev1.Pod {
			mu.Lock()
			defer mu.Unlock()
			out := []*corev1.Pod{}
			for _, p := range pods {
				out = append(out, p)
			}
			return out
		}
		w, err := NewCollectorWatcher(nil, CollectorWatcherOptions{GracePeriod: 30 * time.Second})
		require.NoError(t, err)
		trigger := make(chan struct{}, 1)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			w.loop(ctx, trigger, list)
		}()
		expect := func(want ...string) {
			t.Helper()
			synctest.Wait()
			select {
			case got := <-w.Updates():
				require.Equal(t, want, names(got))
			default:
				t.Fatalf("no collector update, want %v", want)
			}
		}
		expectNone := func() {
			t.Helper()
			synctest.Wait()
			select {
			case got := <-w.Updates():
				t.Fatalf("unexpected collector update %v", names(got))
			default:
			}
		}

		set(pod("a", "n1", true, time.Now()), pod("b", "n2", true, time.Now()))
		trigger <- struct{}{}
		expect("a", "b")

		// b restarts and is back within the grace period: nothing changes.
		set(pod("b", "n2", false, time.Now()))
		trigger <- struct{}{}
		expectNone()
		time.Sleep(20 * time.Second)
		set(pod("b", "n2", true, time.Now()))
		trigger <- struct{}{}
		expectNone()

		// b stays not ready: it leaves when the grace period ends, on the timer.
		set(pod("b", "n2", false, time.Now()))
		trigger <- struct{}{}
		expectNone()
		time.Sleep(30*time.Second - time.Nanosecond)
		expectNone()
		time.Sleep(time.Nanosecond)
		expect("a")

		// b ready again joins; a terminating leaves at once.
		set(pod("b", "n2", true, time.Now()))
		trigger <- struct{}{}
		expect("a", "b")
		term := pod("a", "n1", true, time.Now())
		term.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		set(term)
		trigger <- struct{}{}
		expect("b")

		cancel()
		<-done
	})
}

// TestCollectorWatcher runs against a real API server.
func TestCollectorWatcher(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	ctx := t.Context()
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	const ns = "collectors"
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)

	create := func(name string, lbls map[string]string, ready bool) {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: lbls, Finalizers: []string{"test/keep"}},
			Spec:       corev1.PodSpec{NodeName: "node-" + name, Containers: []corev1.Container{{Name: "c", Image: "otel"}}},
		}
		p, err := kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{
			Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now(),
		}}}
		_, err = kube.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	app := map[string]string{"app": "collector"}
	create("col-0", app, true)
	create("other", map[string]string{"app": "web"}, true)

	w, err := NewCollectorWatcher(kube, CollectorWatcherOptions{
		Namespace: ns, Selector: &metav1.LabelSelector{MatchLabels: app}, GracePeriod: time.Hour,
	})
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	recv := func() []allocation.Collector {
		t.Helper()
		select {
		case cs := <-w.Updates():
			return cs
		case <-time.After(30 * time.Second):
			t.Fatal("no collector update within 30s")
			return nil
		}
	}
	require.Equal(t, []allocation.Collector{{Name: "col-0", Node: "node-col-0"}}, recv())

	// A pod not ready within its grace period counts.
	create("col-1", app, false)
	require.Equal(t, []string{"col-0", "col-1"}, names(recv()))

	// A terminating pod leaves at once (the finalizer keeps it visible).
	require.NoError(t, kube.CoreV1().Pods(ns).Delete(ctx, "col-0", metav1.DeleteOptions{}))
	require.Equal(t, []string{"col-1"}, names(recv()))
	for _, n := range []string{"col-0", "col-1", "other"} {
		_, err := kube.CoreV1().Pods(ns).Patch(ctx, n, "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	}
}
