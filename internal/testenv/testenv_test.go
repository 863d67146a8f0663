package testenv_test

import (
	"os"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringclient "github.com/prometheus-operator/prometheus-operator/pkg/client/versioned"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env, testenv.MonitoringCRDs())) }

// TestServiceMonitorRoundTrip proves the wiring of the test control plane: the
// API server is real, the monitoring CRDs install, and the typed client of the
// pinned prometheus-operator works against it.
func TestServiceMonitorRoundTrip(t *testing.T) {
	cfg := testenv.Require(t, env)
	ctx := t.Context()

	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	version, err := kube.Discovery().ServerVersion()
	require.NoError(t, err)
	require.Equal(t, "v1.37.2", version.GitVersion, "kube-apiserver must carry its version stamp")

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "smoke"}}
	_, err = kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	require.NoError(t, err)

	mon, err := monitoringclient.NewForConfig(cfg)
	require.NoError(t, err)
	sm := &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "smoke"},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": "demo"}},
			Endpoints: []monitoringv1.Endpoint{{Port: "metrics"}},
		},
	}
	_, err = mon.MonitoringV1().ServiceMonitors("smoke").Create(ctx, sm, metav1.CreateOptions{})
	require.NoError(t, err)

	got, err := mon.MonitoringV1().ServiceMonitors("smoke").Get(ctx, "app", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "metrics", got.Spec.Endpoints[0].Port)
	require.Equal(t, "demo", got.Spec.Selector.MatchLabels["app"])

	// The schema is enforced by the API server: an endpoint scheme is http or https.
	bad := sm.DeepCopy()
	bad.Name = "bad"
	bad.Spec.Endpoints[0].Scheme = ptr.To(monitoringv1.Scheme("gopher"))
	_, err = mon.MonitoringV1().ServiceMonitors("smoke").Create(ctx, bad, metav1.CreateOptions{})
	require.Error(t, err, "the API server must validate against the generated CRD schema")
	require.Contains(t, err.Error(), "scheme")
}

// TestFixture: a namespace may be created twice (tests share the control
// plane), and a manager made by NewManager runs until the test ends, its
// cache limited to the namespaces CacheIn names.
func TestFixture(t *testing.T) {
	cfg := testenv.Require(t, env)
	scheme := k8sruntime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	c := testenv.Client(t, cfg, scheme)
	testenv.Namespace(t, c, "fixture", map[string]string{"a": "b"})
	testenv.Namespace(t, c, "fixture", nil)
	var ns corev1.Namespace
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: "fixture"}, &ns))
	require.Equal(t, "b", ns.Annotations["a"])

	mgr := testenv.NewManager(t, cfg, ctrl.Options{Scheme: scheme, Cache: testenv.CacheIn("fixture")})
	testenv.Run(t, mgr.Start)
	require.True(t, mgr.GetCache().WaitForCacheSync(t.Context()))
	var list corev1.ConfigMapList
	require.NoError(t, mgr.GetClient().List(t.Context(), &list, client.InNamespace("fixture")))
	require.Error(t, mgr.GetClient().List(t.Context(), &list, client.InNamespace("default")), "the cache holds only the namespaces named")
}
