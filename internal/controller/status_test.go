package controller_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/controller"
)

// warnings is an events.EventRecorder that keeps the reasons of the Warning
// events it is given.
type warnings struct {
	mu  sync.Mutex // guards got
	got []string
}

func (w *warnings) Eventf(_, _ runtime.Object, eventtype, reason, _, _ string, _ ...any) {
	if eventtype != corev1.EventTypeWarning {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, reason)
}

func (w *warnings) reasons() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.got)
}

// TestWarningOnlyWhenNews: a failure that lasts through several reconciles
// is told by one Warning event, not one per pass; another failure (another
// message under the same reason) is told again. The reconcilers' copies of
// this rule disagreed: invalid input and failed applies were told at every
// pass, the missing cert-manager and secret reader role only on a new reason,
// a conflict on a new reason or message. The rule now is the last one, for
// every failure. The reconcilers run here without a manager, called by the
// test, so the passes are counted exactly.
func TestWarningOnlyWhenNews(t *testing.T) {
	t.Parallel()
	const ns = "warn-once"
	h := startClient(t, ns)
	ctx := t.Context()

	t.Run("invalid collector", func(t *testing.T) {
		rec := &warnings{}
		r := &controller.CollectorReconciler{Client: h.client, Scheme: h.scheme, Recorder: rec, Settings: settings}
		_, err := h.createYAML(t, ns, upstreamExample)
		require.NoError(t, err)
		const name = "collector-with-ta"
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
		c := h.collector(t, ns, name)
		h.update(t, c, func() {
			c.Spec.Ports = []v1beta1.PortsSpec{{ServicePort: corev1.ServicePort{Name: "metrics", Port: 9000}}}
		})
		passes := func(n int) {
			t.Helper()
			for range n {
				_, err := r.Reconcile(ctx, req)
				require.ErrorIs(t, err, reconcile.TerminalError(nil), "invalid input is terminal")
			}
		}
		passes(3)
		require.Equal(t, []string{controller.ReasonInvalidConfig}, rec.reasons(), "one event for one failure")
		c = h.collector(t, ns, name)
		require.Equal(t, c.Generation, c.Status.ObservedGeneration, "a refused generation is observed")

		// Another error under the same reason is news.
		h.update(t, c, func() {
			c.Spec.Ports = nil
			c.Spec.Config.Receivers.Object = map[string]any{"otlp": map[string]any{}}
		})
		passes(2)
		require.Equal(t, []string{controller.ReasonInvalidConfig, controller.ReasonInvalidConfig}, rec.reasons())
	})

	t.Run("failed apply", func(t *testing.T) {
		rec := &warnings{}
		failing := interceptor.NewClient(withWatch{h.client}, interceptor.Funcs{
			Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
				return errInjected
			},
		})
		r := &controller.TargetAllocatorReconciler{Client: failing, Scheme: h.scheme, Recorder: rec, Settings: settings}
		_, err := h.createYAML(t, ns, "apiVersion: opentelemetry.io/v1alpha1\nkind: TargetAllocator\nmetadata: {name: failing}\nspec: {}\n")
		require.NoError(t, err)
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "failing"}}
		for range 3 {
			_, err := r.Reconcile(ctx, req)
			require.ErrorIs(t, err, errInjected)
			require.NotErrorIs(t, err, reconcile.TerminalError(nil), "a failed apply is retried")
		}
		require.Equal(t, []string{controller.ReasonApplyFailed}, rec.reasons(), "one event for one failure")
		var ta v1alpha1.TargetAllocator
		h.get(t, ns, "failing", &ta)
		require.Zero(t, ta.Status.ObservedGeneration, "a generation not applied is not observed")
	})
}
