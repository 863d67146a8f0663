package controller_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/testenv"
)

// managerOptions configure startWith.
type managerOptions struct {
	// namespaces are created and cached; the first is the test's.
	namespaces []string
	// config is the rest config the manager uses (another identity); nil
	// means the admin's.
	config *rest.Config
	// settings of the reconcilers; zero means the package's settings.
	settings *manifests.Settings
	// wrap wraps the manager's client before the reconcilers get it.
	wrap func(client.Client) client.Client
	// restrictCache uses controller.CacheByObject, as cmd/operator does.
	restrictCache bool
	// podReader gives the collector reconciler the manager's API reader, as
	// cmd/operator does.
	podReader bool
	// monitoringRecheck is the collector and allocator reconcilers' MonitoringRecheck.
	monitoringRecheck time.Duration
	// stop, when set, stops the manager before the test ends; stopped is
	// then closed once it has returned.
	stop    context.Context
	stopped chan struct{}
}

// startWith is start with options: several namespaces, another identity,
// other settings, a wrapped client.
func startWith(t *testing.T, o managerOptions) harness {
	t.Helper()
	h := startClient(t, o.namespaces...)
	mgrCfg := testenv.Require(t, env)
	if o.config != nil {
		mgrCfg = o.config
	}
	copts := testenv.CacheIn(o.namespaces...)
	if o.restrictCache {
		copts.ByObject = controller.CacheByObject()
	}
	mgr := testenv.NewManager(t, mgrCfg, ctrl.Options{Scheme: h.scheme, Cache: copts})
	s := settings
	if o.settings != nil {
		s = *o.settings
	}
	mc := mgr.GetClient()
	if o.wrap != nil {
		mc = o.wrap(mc)
	}
	rec := mgr.GetEventRecorder("shardwise-operator")
	cr := &controller.CollectorReconciler{Client: mc, Scheme: h.scheme, Recorder: rec, Settings: s, MonitoringRecheck: o.monitoringRecheck}
	if o.podReader {
		cr.PodReader = mgr.GetAPIReader()
	}
	require.NoError(t, cr.SetupWithManager(mgr, controllerOptions(2)))
	require.NoError(t, (&controller.TargetAllocatorReconciler{Client: mc, Scheme: h.scheme, Recorder: rec, Settings: s, MonitoringRecheck: o.monitoringRecheck}).SetupWithManager(mgr, controllerOptions(2)))
	run := mgr.Start
	if o.stop != nil {
		run = func(ctx context.Context) error {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer close(o.stopped)
			context.AfterFunc(o.stop, cancel)
			return mgr.Start(ctx)
		}
	}
	testenv.Run(t, run)
	return h
}

// update writes a change to obj as a client does while a controller writes
// the same object (its status, its metadata): it reads the latest version by
// obj's key into obj, applies mutate, updates, and starts again on a
// conflict. mutate changes obj only, and so runs on each fresh read. On
// return obj is what the API server stored.
func (h harness) update(t *testing.T, obj client.Object, mutate func()) {
	t.Helper()
	require.NoError(t, h.tryUpdate(t.Context(), obj, mutate), "update %T %s", obj, client.ObjectKeyFromObject(obj))
}

// tryUpdate is update returning its error, for a test that expects a
// refusal or wants its own message: a conflict is retried, any other error
// (an Invalid from the schema) is returned as it is.
func (h harness) tryUpdate(ctx context.Context, obj client.Object, mutate func()) error {
	return h.retryUpdate(ctx, obj, mutate, func(ctx context.Context, obj client.Object) error {
		return h.client.Update(ctx, obj)
	})
}

// updateStatus is update for the status subresource, for a test that plays
// the controller of a workload (envtest runs none).
func (h harness) updateStatus(t *testing.T, obj client.Object, mutate func()) {
	t.Helper()
	err := h.retryUpdate(t.Context(), obj, mutate, func(ctx context.Context, obj client.Object) error {
		return h.client.Status().Update(ctx, obj)
	})
	require.NoError(t, err, "update the status of %T %s", obj, client.ObjectKeyFromObject(obj))
}

// retryUpdate reads obj afresh, mutates it and writes it with write until
// the write does not conflict.
func (h harness) retryUpdate(ctx context.Context, obj client.Object, mutate func(), write func(context.Context, client.Object) error) error {
	key := client.ObjectKeyFromObject(obj)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		// The client zeroes obj before it decodes the read into it, so
		// nothing of a failed attempt is left.
		if err := h.client.Get(ctx, key, obj); err != nil {
			return err
		}
		mutate()
		return write(ctx, obj)
	})
}

// scale sets the replicas of obj through its scale subresource, as kubectl
// scale and an autoscaler do: again on a conflict, since the scale's version
// is obj's, which the operator's status writes change.
func (h harness) scale(t *testing.T, obj client.Object, replicas int32) {
	t.Helper()
	ctx := t.Context()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s autoscalingv1.Scale
		if err := h.client.SubResource("scale").Get(ctx, obj, &s); err != nil {
			return err
		}
		s.Spec.Replicas = replicas
		return h.client.SubResource("scale").Update(ctx, obj, client.WithSubResourceBody(&s))
	})
	require.NoError(t, err, "scale %T %s to %d", obj, client.ObjectKeyFromObject(obj), replicas)
}

// withWatch adapts a client.Client to the interceptor's client.WithWatch.
type withWatch struct{ client.Client }

func (withWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch not supported")
}

// writeLog records the writes a client makes, by kind and name, and can fail
// the k-th write.
type writeLog struct {
	mu     sync.Mutex // guards writes
	writes []string
	// failAt makes the write with this 1-based index and every later one
	// fail, as if the process had died there; 0 never.
	failAt atomic.Int64
	count  atomic.Int64
}

var errInjected = errors.New("injected fault: the operator stops here")

func (l *writeLog) record(op string, obj any) error {
	n := l.count.Add(1)
	desc := op + " " + describe(obj)
	l.mu.Lock()
	l.writes = append(l.writes, desc)
	l.mu.Unlock()
	if k := l.failAt.Load(); k > 0 && n >= k {
		return fmt.Errorf("%w (write %d: %s)", errInjected, n, desc)
	}
	return nil
}

func describe(obj any) string {
	switch o := obj.(type) {
	case client.Object:
		return fmt.Sprintf("%T %s", o, o.GetName())
	case interface {
		GetKind() string
		GetName() string
	}:
		return o.GetKind() + " " + o.GetName()
	}
	return fmt.Sprintf("%T", obj)
}

func (l *writeLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.writes...)
}

func (l *writeLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes = nil
	l.count.Store(0)
}

// wrap returns c with every write recorded in l (and failed if l says so).
func (l *writeLog) wrap(c client.Client) client.Client {
	return interceptor.NewClient(withWatch{c}, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := l.record("create", obj); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := l.record("update", obj); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if err := l.record("patch", obj); err != nil {
				return err
			}
			return c.Patch(ctx, obj, p, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if err := l.record("apply", obj); err != nil {
				return err
			}
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := l.record("delete", obj); err != nil {
				return err
			}
			return c.Delete(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := l.record(sub+"-update", obj); err != nil {
				return err
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := l.record(sub+"-patch", obj); err != nil {
				return err
			}
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
}

// cacheClient starts a cache restricted as cmd/operator's is, to namespace
// ns, until the test ends, and returns it as a reader.
func cacheClient(t *testing.T, cfg *rest.Config, ns string) (client.Reader, error) {
	t.Helper()
	scheme, err := controller.NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, ByObject: controller.CacheByObject(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		return nil, err
	}
	testenv.Run(t, c.Start)
	if !c.WaitForCacheSync(t.Context()) {
		return nil, errors.New("cache did not sync")
	}
	return c, nil
}

// quiet waits until l has recorded no write for ten polls in a row (a
// second), so that reconciles queued earlier are done.
func quiet(t *testing.T, l *writeLog) {
	t.Helper()
	n, stable := -1, 0
	eventually(t, waitFor, func() error {
		m := len(l.snapshot())
		if m == n {
			stable++
		} else {
			n, stable = m, 0
		}
		if stable >= 10 {
			return nil
		}
		return fmt.Errorf("writes still coming (%d)", m)
	})
}

// TestUpdateRetriesOnConflict checks the harness's update: a write that gets
// in between its read and its update makes it read again and apply the
// change to the fresh object, with nothing of the failed attempt left.
func TestUpdateRetriesOnConflict(t *testing.T) {
	t.Parallel()
	ns := "update-conflict"
	ctx := t.Context()
	// No operator runs: the only other writer is the test.
	h := startClient(t, ns)
	c := h.client
	_, err := h.createYAML(t, ns, upstreamManifest(t, "smoke-simplest.yaml"))
	require.NoError(t, err)

	col := h.collector(t, ns, "simplest")
	attempts := 0
	h.update(t, col, func() {
		attempts++
		if attempts == 1 {
			other := col.DeepCopy()
			metav1.SetMetaDataAnnotation(&other.ObjectMeta, "other", "2")
			require.NoError(t, c.Update(ctx, other))
			metav1.SetMetaDataAnnotation(&col.ObjectMeta, "first-attempt", "1")
		}
		metav1.SetMetaDataAnnotation(&col.ObjectMeta, "mine", "3")
	})
	require.Equal(t, 2, attempts, "the first attempt conflicts")
	got := h.collector(t, ns, "simplest")
	require.Equal(t, map[string]string{"other": "2", "mine": "3"}, got.Annotations)
	require.Equal(t, got.ResourceVersion, col.ResourceVersion, "obj is what the API server stored")
}
