package discovery

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
	"k8s.io/client-go/rest"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/internal/testenv"
)

// grant binds a ClusterRole with rules to user, cluster-wide.
func grant(t *testing.T, kube kubernetes.Interface, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	_, err := kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// restrictedUser returns the config of a user with rules and an admin client.
func restrictedUser(t *testing.T, name string, rules ...rbacv1.PolicyRule) (*rest.Config, kubernetes.Interface) {
	t.Helper()
	testenv.Require(t, env)
	admin, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	grant(t, admin, name, rules...)
	return env.UserConfig(t, name), admin
}

var readOnly = []string{"get", "list", "watch"}

// TestOperatorForbiddenKind is issue 11 item 7: when RBAC forbids listing
// one prometheus-operator kind (Probes), the others still become jobs after
// the bounded wait, and the forbidden kind is reported.
func TestOperatorForbiddenKind(t *testing.T) {
	t.Parallel()
	user, admin := restrictedUser(t, "no-probes",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: readOnly},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"}, Verbs: []string{"get"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		rbacv1.PolicyRule{APIGroups: []string{"monitoring.coreos.com"}, Resources: []string{"servicemonitors", "podmonitors", "scrapeconfigs"}, Verbs: readOnly},
	)
	const ns = "forbidden-kind"
	_, err := admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	applyDoc(t, newCtrlClient(t, env.Config), `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: sm, namespace: forbidden-kind}
spec:
  selector: {matchLabels: {app: a}}
  endpoints: [{port: metrics}]
`)
	parsed, err := ParseConfig([]byte(`
prometheus_cr:
  enabled: true
  service_monitor_selector: {}
  service_monitor_namespace_selector: {matchLabels: {kubernetes.io/metadata.name: forbidden-kind}}
  probe_selector: {}
`))
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	sink := newSinkRecorder()
	startOperatorWatcher(t, user, sink, OperatorWatcherOptions{
		Config: parsed.PrometheusCR, Namespace: ns, Metrics: m, SyncTimeout: time.Second,
	})
	sink.waitFor(t, func(jobs []string) bool { return len(jobs) == 1 && jobs[0] == "serviceMonitor/forbidden-kind/sm/0" })
	require.Equal(t, 0.0, testutil.ToFloat64(m.informerSynced.WithLabelValues(KindProbe)), "the forbidden kind is reported")
	require.Equal(t, 1.0, testutil.ToFloat64(m.informerSynced.WithLabelValues(KindServiceMonitor)))
}

// TestCollectorsForbiddenPods is issue 11 item 7 for collector pods: a
// forbidden pod list is reported, sends no collector set (the allocator
// stays unready), and the set comes once RBAC allows the list.
func TestCollectorsForbiddenPods(t *testing.T) {
	t.Parallel()
	user, admin := restrictedUser(t, "no-pods",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: readOnly})
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
	w, err := NewCollectorWatcher(kube, CollectorWatcherOptions{
		Logger:      slog.New(slog.NewTextHandler(testWriter{t}, nil)),
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
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: readOnly}},
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
func runCollectorWatcher(t *testing.T, w *CollectorWatcher) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}
