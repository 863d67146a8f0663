package controller_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
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
	return startWith(t, managerOptions{namespaces: []string{ns}})
}

// startClient creates the namespaces and returns a direct (uncached) client,
// with no operator running.
func startClient(t *testing.T, namespaces ...string) harness {
	t.Helper()
	cfg := testenv.Require(t, env)
	scheme, err := controller.NewScheme()
	require.NoError(t, err)
	c := testenv.Client(t, cfg, scheme)
	for _, ns := range namespaces {
		testenv.Namespace(t, c, ns, nil)
	}
	return harness{client: c, scheme: scheme}
}

// controllerOptions are the reconcilers' options in tests: the same
// controller names are registered by every test's manager.
func controllerOptions(workers int) ctrlcontroller.Options {
	return ctrlcontroller.Options{MaxConcurrentReconciles: workers, SkipNameValidation: ptr.To(true)}
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
