package operator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/shardwise/shardwise/internal/allocatorconfig"
	"github.com/shardwise/shardwise/internal/testenv"
)

// TestOperatorWarningEvent is issue 11 item 10: a ServiceMonitor the
// allocator rejects (it references a Secret that does not exist) gets a
// Warning event on the API server.
func TestOperatorWarningEvent(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	ctx := t.Context()
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	const ns = "events"
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	applyDoc(t, newCtrlClient(t, cfg), `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: broken, namespace: events}
spec:
  selector: {matchLabels: {app: a}}
  endpoints:
  - port: metrics
    authorization: {credentials: {name: missing, key: t}}
`)
	parsed, err := allocatorconfig.ParseConfig([]byte(`
prometheus_cr:
  enabled: true
  service_monitor_selector: {}
  service_monitor_namespace_selector: {matchLabels: {kubernetes.io/metadata.name: events}}
`))
	require.NoError(t, err)
	sink := newSinkRecorder()
	startOperatorWatcher(t, cfg, sink, WatcherOptions{Config: parsed.PrometheusCR, Namespace: ns})
	sink.waitFor(t, func(jobs []string) bool { return len(jobs) == 0 })
	// The condition runs on another goroutine: it reports through ct, not t.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		evs, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if !assert.NoError(ct, err) {
			return
		}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Kind == "ServiceMonitor" && e.InvolvedObject.Name == "broken" {
				t.Log(e.Reason, e.Message)
				return
			}
		}
		ct.Errorf("no Warning event for ServiceMonitor broken among %d events", len(evs.Items))
	}, 30*time.Second, 50*time.Millisecond, "no Warning event for the broken ServiceMonitor")
}
