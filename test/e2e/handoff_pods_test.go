package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const handoffNamespace = "handoff-e2e"

// readyPod creates collector pod name, ready (envtest runs no kubelet: the
// test writes the status).
func readyPod(ctx context.Context, t *testing.T, k8s client.Client, name string) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: handoffNamespace, Labels: map[string]string{"app": "collector"}},
		// Bound to a node: the API server deletes an unscheduled pod at
		// once, a scheduled one gracefully (it stays terminating).
		Spec: corev1.PodSpec{NodeName: "node-0", Containers: []corev1.Container{{Name: "otc", Image: "otel/opentelemetry-collector-contrib"}}},
	}
	require.NoError(t, k8s.Create(ctx, p))
	p.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}},
	}
	require.NoError(t, k8s.Status().Update(ctx, p))
}

// TestHandoffPods is the handoff through a scale-down and a rolling restart
// of collector pods, with the real receivers. With no kubelet a deleted pod
// stays terminating, as a real one does for its grace period while its
// collector still runs: the allocator drains it (its targets move while it
// still scrapes them), then the test stops its receiver and deletes the pod
// for good. The rolling restart recreates the pod under the same name and
// starts its receiver again; its targets come back to it. Through both, no
// target goes unscraped for longer than its scrape interval plus jitter.
func TestHandoffPods(t *testing.T) {
	t.Parallel() // it mostly waits: beside TestHandoff
	bin := allocatorBin(t)
	k8s, kubeconfigFile := startControlPlane(t)
	ctx := withTimeout(t, 5*time.Minute)
	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: handoffNamespace}}))
	pods := []string{"collector-0", "collector-1", "collector-2"}
	for _, p := range pods {
		readyPod(ctx, t, k8s, p)
	}

	log := &scrapeLog{at: map[string][]scrape{}}
	var addrs []string
	for i := range 18 {
		addrs = append(addrs, startRecordingTarget(t, log, fmt.Sprintf("p%02d", i)))
	}
	cfg := allocatorConfig(nil, []any{map[string]any{
		"job_name":        "pods",
		"scrape_interval": scrapeInterval,
		"scrape_timeout":  scrapeInterval,
		"static_configs":  []any{map[string]any{"targets": addrs}},
	}})
	delete(cfg, "collectors")
	cfg["collector_namespace"] = handoffNamespace
	cfg["collector_selector"] = map[string]any{"matchLabels": map[string]any{"app": "collector"}}
	cfg["kube_config_file_path"] = kubeconfigFile
	alloc := startAllocator(t, bin, cfg)
	allocAPI := newAPI(alloc.url)
	alloc.eventually(t, convergeTimeout, "allocator serves the job to the three pods", func() error {
		return allocAPI.contract([]string{"pods"}, pods)
	})

	logs := &logBuffer{}
	dumpOnFailure(t, "receiver logs", logs)
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(zapcore.EncoderConfig{MessageKey: "msg"}), logs, zapcore.InfoLevel)
	running := map[string]receiver.Metrics{}
	start := func(id string) { running[id] = newReceiver(t, alloc.url, id, core, &consumertest.MetricsSink{}) }
	stop := func(id string) { stopReceiver(t, id, running[id]); delete(running, id) }
	t.Cleanup(func() {
		for id := range running {
			stop(id)
		}
	})
	for _, p := range pods {
		start(p)
	}
	alloc.eventually(t, convergeTimeout, "every target scraped, each by one collector", func() error {
		now := time.Now()
		if n := len(log.scraped(now.Add(-2 * time.Second))); n != len(addrs) {
			return fmt.Errorf("%d of %d targets scraped in the last 2 s", n, len(addrs))
		}
		if f := log.figures(now.Add(-3*time.Second), now); f.overlap > 0 {
			return fmt.Errorf("%.1f target-seconds scraped twice", f.overlap)
		}
		return nil
	})
	begin := time.Now()

	// drain deletes pod name (it stays terminating), lets the handoff move
	// its targets, then stops its collector and deletes the pod for good.
	drain := func(name string) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: handoffNamespace}}
		require.NoError(t, k8s.Delete(ctx, pod))
		var got corev1.Pod
		require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(pod), &got), "the pod stays, terminating")
		require.NotNil(t, got.DeletionTimestamp)
		// The new owners' first poll at least the settle (10 s) after the
		// move, then the settle again, then the drained receiver's own poll
		// and reloads (5 s each at most).
		time.Sleep(32 * time.Second)
		stop(name)
		require.NoError(t, k8s.Delete(ctx, pod, client.GracePeriodSeconds(0)))
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))
		}, 30*time.Second, 100*time.Millisecond)
	}

	// Scale-down: collector-2 goes.
	drain("collector-2")
	// Rolling restart of collector-0: drained, then back under its name.
	drain("collector-0")
	readyPod(ctx, t, k8s, "collector-0")
	start("collector-0")
	time.Sleep(32 * time.Second)

	f := log.figures(begin, time.Now())
	t.Logf("scale-down and rolling restart: %d of %d targets changed collector, longest gap %v (%s), overlap %.1f target-seconds",
		f.moved, len(addrs), f.longestGap.Round(time.Millisecond), f.gapTarget, f.overlap)
	require.Positive(t, f.moved)
	require.LessOrEqual(t, f.longestGap, time.Second+500*time.Millisecond, "a target went unscraped longer than its interval plus jitter")
	now := time.Now()
	if n := len(log.scraped(now.Add(-2 * time.Second))); n != len(addrs) {
		t.Fatalf("%d of %d targets scraped at the end", n, len(addrs))
	}
	owner, err := allocAPI.assignment([]string{"pods"}, []string{"collector-0", "collector-1"})
	require.NoError(t, err)
	require.Len(t, owner, len(addrs))
}
