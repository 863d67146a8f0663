package collector

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
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
	wasMember := map[string]member{"term": {node: "n"}, "failed": {node: "n"}, "gone": {node: "n"}, "new": {node: "n", since: now.Add(-10 * time.Second)}}
	for _, tc := range []struct {
		name     string
		pods     []*corev1.Pod
		prev     map[string]member
		want     []string
		notReady int
		next     time.Time
	}{
		{"ready", []*corev1.Pod{pod("b", "n2", true, now), pod("a", "n1", true, now)}, nil, []string{"a", "b"}, 0, time.Time{}},
		{"not ready within grace at start", []*corev1.Pod{pod("a", "n", false, now.Add(-29*time.Second))}, nil, []string{"a"}, 1, now.Add(time.Second)},
		{"not ready past grace at start", []*corev1.Pod{pod("a", "n", false, now.Add(-30*time.Second))}, nil, []string{}, 0, time.Time{}},
		{"terminating at start", []*corev1.Pod{terminating}, nil, []string{}, 0, time.Time{}},
		{"finished at start", []*corev1.Pod{failed}, nil, []string{}, 0, time.Time{}},
		{"never ready at start counts from creation", []*corev1.Pod{neverReady}, nil, []string{"new"}, 1, now.Add(20 * time.Second)},
		{"never ready later does not join", []*corev1.Pod{neverReady}, map[string]member{}, []string{}, 0, time.Time{}},
		{"terminating member stays for the grace period", []*corev1.Pod{terminating}, wasMember, []string{"failed", "gone", "new", "term"}, 4, now.Add(20 * time.Second)},
		{"finished member stays", []*corev1.Pod{failed}, map[string]member{"failed": {node: "n"}}, []string{"failed"}, 1, now.Add(30 * time.Second)},
		{"deleted member stays", nil, map[string]member{"gone": {node: "n"}}, []string{"gone"}, 1, now.Add(30 * time.Second)},
		{"deleted member past grace leaves", nil, map[string]member{"gone": {node: "n", since: now.Add(-30 * time.Second)}}, []string{}, 0, time.Time{}},
		{"member back ready", []*corev1.Pod{pod("new", "n", true, now)}, wasMember, []string{"failed", "gone", "new", "term"}, 3, now.Add(30 * time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, _, notReady, next := collectorsAt(now, tc.pods, 30*time.Second, false, tc.prev)
			require.Equal(t, tc.want, names(got))
			require.Equal(t, tc.notReady, notReady)
			require.Equal(t, tc.next, next)
		})
	}
	got, _, _, _ := collectorsAt(now, []*corev1.Pod{pod("a", "node-1", true, now)}, time.Second, false, nil)
	require.Equal(t, []allocation.Collector{{Name: "a", Node: "node-1"}}, got)
}

// restartPods are the pods of a StatefulSet rolling restart: col-0 and
// col-1 ready at start, col-0 terminating a second later, then Pending
// under the same name; with the 30 s grace period.
func restartPods() (start time.Time, grace time.Duration, ready []*corev1.Pod, terminating, pending *corev1.Pod) {
	start = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ready = []*corev1.Pod{pod("col-0", "n0", true, start), pod("col-1", "n1", true, start)}
	terminating = pod("col-0", "n0", true, start)
	terminating.DeletionTimestamp = &metav1.Time{Time: start.Add(time.Second)}
	pending = pod("col-0", "", false, start.Add(3*time.Second))
	pending.Status.Phase = corev1.PodPending
	return start, 30 * time.Second, ready, terminating, pending
}

// TestCollectorsRollingRestart is issue 11 item 8: a StatefulSet pod deleted
// and recreated under the same name within the grace period, Pending then
// ready, never leaves the collector set.
func TestCollectorsRollingRestart(t *testing.T) {
	t.Parallel()
	start, grace, ready, terminating, pending := restartPods()
	set, members, _, _ := collectorsAt(start, ready, grace, false, nil)
	want := names(set)
	steps := []struct {
		at   time.Duration
		pods []*corev1.Pod
	}{
		{1 * time.Second, []*corev1.Pod{terminating, ready[1]}},
		{2 * time.Second, []*corev1.Pod{ready[1]}},
		{3 * time.Second, []*corev1.Pod{pending, ready[1]}},
		{20 * time.Second, []*corev1.Pod{pod("col-0", "n2", true, start.Add(20*time.Second)), ready[1]}},
		{60 * time.Second, []*corev1.Pod{pod("col-0", "n2", true, start.Add(20*time.Second)), ready[1]}},
	}
	for _, st := range steps {
		set, members, _, _ = collectorsAt(start.Add(st.at), st.pods, grace, false, members)
		require.Equal(t, want, names(set), "at %s", st.at)
	}
}

// TestCollectorsDrainRollingRestart: with drain (the handoff on), the same
// rolling restart makes the terminating pod a draining collector at once,
// drops it when it is gone, and takes the new pod back once it is ready.
func TestCollectorsDrainRollingRestart(t *testing.T) {
	t.Parallel()
	start, grace, ready, terminating, pending := restartPods()
	_, members, _, _ := collectorsAt(start, ready, grace, true, nil)
	steps := []struct {
		at       time.Duration
		pods     []*corev1.Pod
		want     []string
		draining []string
	}{
		{1 * time.Second, []*corev1.Pod{terminating, ready[1]}, []string{"col-1"}, []string{"col-0"}},
		{2 * time.Second, []*corev1.Pod{ready[1]}, []string{"col-1"}, nil},
		{3 * time.Second, []*corev1.Pod{pending, ready[1]}, []string{"col-1"}, nil},
		{20 * time.Second, []*corev1.Pod{pod("col-0", "n2", true, start.Add(20*time.Second)), ready[1]}, []string{"col-0", "col-1"}, nil},
	}
	for _, st := range steps {
		var set []allocation.Collector
		set, members, _, _ = collectorsAt(start.Add(st.at), st.pods, grace, true, members)
		var got, draining []string
		for _, c := range set {
			if c.Draining {
				draining = append(draining, c.Name)
			} else {
				got = append(got, c.Name)
			}
		}
		require.Equal(t, st.want, got, "at %s", st.at)
		require.Equal(t, st.draining, draining, "draining at %s", st.at)
	}
}

func TestStaticCollectors(t *testing.T) {
	t.Parallel()
	require.Equal(t, []allocation.Collector{{Name: "a"}, {Name: "b", Node: "n"}},
		Static([]allocatorconfig.StaticCollector{{Name: "b", Node: "n"}, {Name: "a"}}))
}

// fakePods is a pod list the test changes, read by the watcher loop.
type fakePods struct {
	mu   sync.Mutex
	pods map[string]*corev1.Pod
}

func (f *fakePods) set(ps ...*corev1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pods == nil {
		f.pods = map[string]*corev1.Pod{}
	}
	for _, p := range ps {
		f.pods[p.Name] = p
	}
}

func (f *fakePods) list() []*corev1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []*corev1.Pod{}
	for _, p := range f.pods {
		out = append(out, p)
	}
	return out
}

// expectUpdate waits until every goroutine of the bubble blocks, then
// requires that w sent the collectors want, or nothing when want is nil.
func expectUpdate(t *testing.T, w *Watcher, want []string) {
	t.Helper()
	synctest.Wait()
	select {
	case got := <-w.Updates():
		if want == nil {
			t.Fatalf("unexpected collector update %v", names(got))
		}
		require.Equal(t, want, names(got))
	default:
		if want != nil {
			t.Fatalf("no collector update, want %v", want)
		}
	}
}

// TestCollectorGracePeriod drives the watcher loop on a fake clock.
func TestCollectorGracePeriod(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var fp fakePods
		set := fp.set
		w, err := NewWatcher(nil, WatcherOptions{GracePeriod: 30 * time.Second})
		require.NoError(t, err)
		trigger := make(chan struct{}, 1)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			w.loop(ctx, trigger, fp.list)
		}()
		expect := func(want ...string) { t.Helper(); expectUpdate(t, w, want) }
		expectNone := func() { t.Helper(); expectUpdate(t, w, nil) }

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

		// b ready again joins; a terminating stays for the grace period (it
		// may come back under the same name), then leaves.
		set(pod("b", "n2", true, time.Now()))
		trigger <- struct{}{}
		expect("a", "b")
		term := pod("a", "n1", true, time.Now())
		term.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		set(term)
		trigger <- struct{}{}
		expectNone()
		time.Sleep(30 * time.Second)
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

	create := func(name string, lbls map[string]string, ready bool) { createPod(t, kube, ns, name, lbls, ready) }
	app := map[string]string{"app": "collector"}
	create("col-0", app, true)
	create("other", map[string]string{"app": "web"}, true)

	w, err := NewWatcher(kube, WatcherOptions{
		Namespace: ns, Selector: &metav1.LabelSelector{MatchLabels: app}, GracePeriod: time.Hour,
	})
	require.NoError(t, err)
	runCollectorWatcher(t, w)
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

	// A new pod joins only once ready: the first update after it was
	// created not ready is the one where it is ready.
	create("col-1", app, false)
	setReady := func(name string) { setPodReady(t, kube, ns, name) }
	setReady("col-1")
	require.Equal(t, []string{"col-0", "col-1"}, names(recv()))

	// Issue 11 item 8, a StatefulSet rolling restart: col-0 is terminating,
	// then deleted, then recreated Pending under the same name, then ready,
	// all within the grace period. It never leaves: the next update is the
	// one for col-2, with col-0 in it.
	require.NoError(t, kube.CoreV1().Pods(ns).Delete(ctx, "col-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	_, err = kube.CoreV1().Pods(ns).Patch(ctx, "col-0", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := kube.CoreV1().Pods(ns).Get(ctx, "col-0", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 10*time.Millisecond)
	create("col-0", app, false)
	setReady("col-0")
	create("col-2", app, true)
	require.Equal(t, []string{"col-0", "col-1", "col-2"}, names(recv()))
	for _, n := range []string{"col-0", "col-1", "col-2", "other"} {
		_, err := kube.CoreV1().Pods(ns).Patch(ctx, n, "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	}
}

// createPod creates a collector pod that keeps a finalizer (the test removes
// it), running, ready or not.
func createPod(t *testing.T, kube kubernetes.Interface, ns, name string, lbls map[string]string, ready bool) {
	t.Helper()
	ctx := t.Context()
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

// setPodReady makes a pod ready.
func setPodReady(t *testing.T, kube kubernetes.Interface, ns, name string) {
	t.Helper()
	ctx := t.Context()
	p, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	_, err = kube.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
}
