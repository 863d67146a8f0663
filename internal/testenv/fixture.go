package testenv

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Client returns a direct (uncached) client of cfg for scheme.
func Client(tb testing.TB, cfg *rest.Config, scheme *k8sruntime.Scheme) client.Client {
	tb.Helper()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		tb.Fatalf("client: %v", err)
	}
	return c
}

// Namespace creates the namespace name through c; one that exists already
// (another test's of the shared control plane) is fine.
func Namespace(tb testing.TB, c client.Client, name string, annotations map[string]string) {
	tb.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
	if err := c.Create(tb.Context(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		tb.Fatalf("create namespace %s: %v", name, err)
	}
}

// NewManager returns a manager of cfg as o says, with its metrics and health
// servers off (tests run many managers at once, on no fixed port).
func NewManager(tb testing.TB, cfg *rest.Config, o ctrl.Options) ctrl.Manager {
	tb.Helper()
	o.Metrics = metricsserver.Options{BindAddress: "0"}
	o.HealthProbeBindAddress = "0"
	mgr, err := ctrl.NewManager(cfg, o)
	if err != nil {
		tb.Fatalf("new manager: %v", err)
	}
	return mgr
}

// CacheIn is the cache options of a manager that caches only namespaces.
func CacheIn(namespaces ...string) cache.Options {
	m := make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		m[ns] = cache.Config{}
	}
	return cache.Options{DefaultNamespaces: m}
}

// Run runs run (a manager's Start, a component's Run) until the test ends:
// at cleanup its context is cancelled and the test waits for it to return,
// failing if it returned an error.
func Run(tb testing.TB, run func(context.Context) error) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("run: %v", err)
		}
	})
}
