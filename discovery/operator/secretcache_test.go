package operator

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	promconfig "github.com/prometheus/prometheus/config"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/internal/allocatorconfig"
	"github.com/shardwise/shardwise/internal/testenv"
)

// countingSink counts generations.
type countingSink struct {
	*sinkRecorder
	n atomic.Int64
}

func (c *countingSink) ApplyOperatorConfig(scs []*promconfig.ScrapeConfig) error {
	c.n.Add(1)
	return c.sinkRecorder.ApplyOperatorConfig(scs)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestOperatorSecretGetsCached is issue 11 item 9: N generations within one
// CRDPollInterval do not cost N GETs of a referenced Secret (counted on the
// wire with a wrapped transport).
func TestOperatorSecretGetsCached(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	ctx := t.Context()
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	const ns = "secretcount"
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "tok"}, StringData: map[string]string{"t": "one"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	c := newCtrlClient(t, cfg)
	applyDoc(t, c, `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: sm, namespace: secretcount}
spec:
  selector: {matchLabels: {app: a}}
  endpoints:
  - port: metrics
    authorization: {credentials: {name: tok, key: t}}
`)
	parsed, err := allocatorconfig.ParseConfig([]byte(`
prometheus_cr:
  enabled: true
  crd_poll_interval: 1h
  service_monitor_selector: {}
  service_monitor_namespace_selector: {matchLabels: {kubernetes.io/metadata.name: secretcount}}
`))
	require.NoError(t, err)
	var gets atomic.Int64
	counted := rest.CopyConfig(cfg)
	counted.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/namespaces/secretcount/secrets/tok") {
				gets.Add(1)
			}
			return rt.RoundTrip(r)
		})
	}
	sink := &countingSink{sinkRecorder: newSinkRecorder()}
	startOperatorWatcher(t, counted, sink, WatcherOptions{Config: parsed.PrometheusCR, Namespace: ns})
	sink.waitFor(t, func(jobs []string) bool { return len(jobs) == 1 })
	const generations = 5
	for i := 1; i <= generations; i++ {
		start := sink.n.Load()
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("monitoring.coreos.com/v1")
		u.SetKind("ServiceMonitor")
		u.SetNamespace(ns)
		u.SetName("sm")
		require.NoError(t, c.Patch(ctx, u, ctrlclient.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"labels":{"gen":"%d"}}}`, i))))
		require.Eventually(t, func() bool { return sink.n.Load() > start }, 30*time.Second, 10*time.Millisecond)
	}
	require.GreaterOrEqual(t, sink.n.Load(), int64(generations+1))
	require.Equal(t, int64(1), gets.Load(), "one GET of the Secret for %d generations", sink.n.Load())
}
