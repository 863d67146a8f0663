package operator

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardwise/shardwise/internal/allocatorconfig"
	"github.com/shardwise/shardwise/internal/testenv"
)

// TestOperatorForbiddenKind is issue 11 item 7: when RBAC forbids listing
// one prometheus-operator kind (Probes), the others still become jobs after
// the bounded wait, and the forbidden kind is reported.
func TestOperatorForbiddenKind(t *testing.T) {
	t.Parallel()
	user, admin := testenv.RestrictedUser(t, env, "no-probes",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: testenv.ReadOnly},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"}, Verbs: []string{"get"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		rbacv1.PolicyRule{APIGroups: []string{"monitoring.coreos.com"}, Resources: []string{"servicemonitors", "podmonitors", "scrapeconfigs"}, Verbs: testenv.ReadOnly},
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
	parsed, err := allocatorconfig.ParseConfig([]byte(`
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
	startOperatorWatcher(t, user, sink, WatcherOptions{
		Config: parsed.PrometheusCR, Namespace: ns, Metrics: m, SyncTimeout: time.Second,
	})
	sink.waitFor(t, func(jobs []string) bool { return len(jobs) == 1 && jobs[0] == "serviceMonitor/forbidden-kind/sm/0" })
	require.Equal(t, 0.0, testutil.ToFloat64(m.informerSynced.WithLabelValues(KindProbe)), "the forbidden kind is reported")
	require.Equal(t, 1.0, testutil.ToFloat64(m.informerSynced.WithLabelValues(KindServiceMonitor)))
	require.GreaterOrEqual(t, testutil.ToFloat64(m.generations), 1.0, "the generation the sink received is counted")
}
