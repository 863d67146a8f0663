package controller_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(testenv.Main(m, &env, filepath.Join(testenv.Root(), "config", "crd", "bases")))
}

var settings = manifests.Settings{
	CollectorImage:       "otel/opentelemetry-collector-contrib:0.165.0",
	TargetAllocatorImage: "ghcr.io/shardwise/allocator:dev",
}

type harness struct {
	client client.Client // direct, uncached
	scheme *runtime.Scheme
}

// start creates a namespace for one test and runs a manager with both
// reconcilers, its cache limited to that namespace, until the test ends. It
// returns a direct (uncached) client.
func start(t *testing.T, ns string) harness {
	t.Helper()
	cfg := testenv.Require(t, env)
	scheme, err := controller.NewScheme()
	require.NoError(t, err)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	require.NoError(t, c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	require.NoError(t, err)
	opts := ctrlcontroller.Options{MaxConcurrentReconciles: 2, SkipNameValidation: ptr.To(true)}
	rec := mgr.GetEventRecorder("shardwise-operator")
	require.NoError(t, (&controller.CollectorReconciler{Client: mgr.GetClient(), Scheme: scheme, Recorder: rec, Settings: settings}).SetupWithManager(mgr, opts))
	require.NoError(t, (&controller.TargetAllocatorReconciler{Client: mgr.GetClient(), Scheme: scheme, Recorder: rec, Settings: settings}).SetupWithManager(mgr, opts))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return harness{client: c, scheme: scheme}
}

// eventually polls check until it returns nil, failing the test with the
// last error after timeout.
func eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			require.NoError(t, err, "condition not met within %s", timeout)
		}
		select {
		case <-t.Context().Done():
			require.NoError(t, errors.Join(t.Context().Err(), err))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

const waitFor = 30 * time.Second

// createYAML creates an object from a manifest, as kubectl create would.
func (h harness) createYAML(t *testing.T, namespace, doc string) (*unstructured.Unstructured, error) {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
	u.SetNamespace(namespace)
	return u, h.client.Create(t.Context(), u)
}
