package collector

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/internal/testenv"
)

// TestCollectorsForbiddenPods is issue 11 item 7 for collector pods: a
// forbidden pod list is reported, sends no collector set (the allocator
// stays unready), and the set comes once RBAC allows the list.
func TestCollectorsForbiddenPods(t *testing.T) {
	t.Parallel()
	user, admin := testenv.RestrictedUser(t, env, "no-pods",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: testenv.ReadOnly})
	const ns = "forbidden-pods"
	ctx := t.Context()
	_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "col-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	kube, err := kubernetes.NewForConfig(user)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	w, err := NewWatcher(kube, WatcherOptions{
		Logger:      testenv.Logger(t, slog.LevelInfo),
		Metrics:     m,
		Namespace:   ns,
		SyncTimeout: 200 * time.Millisecond,
		GracePeriod: time.Hour,
	})
	require.NoError(t, err)
	runCollectorWatcher(t, w)
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(m.informerSynced.WithLabelValues("Pod")) == 0 && testutil.CollectAndCount(m.informerSynced) == 1
	}, 20*time.Second, 20*time.Millisecond, "the forbidden pod list is reported")
	select {
	case cs := <-w.Updates():
		t.Fatalf("a collector set %v while pods cannot be listed", cs)
	default:
	}

	_, err = admin.RbacV1().ClusterRoles().Update(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "no-pods"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: testenv.ReadOnly}},
	}, metav1.UpdateOptions{})
	require.NoError(t, err)
	select {
	case cs := <-w.Updates():
		require.Equal(t, []allocation.Collector{{Name: "col-0"}}, cs)
	case <-time.After(60 * time.Second):
		t.Fatal("no collector set after the pod list was allowed")
	}
	require.Equal(t, 1.0, testutil.ToFloat64(m.informerSynced.WithLabelValues("Pod")))
}

// runCollectorWatcher runs w until the test ends.
func runCollectorWatcher(t *testing.T, w *Watcher) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}
