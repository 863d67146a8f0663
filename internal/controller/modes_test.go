package controller_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests"
)

// upstreamManifest reads one of upstream's example manifests that the
// manifests package's golden tests also build.
func upstreamManifest(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "manifests", "testdata", "upstream", file))
	require.NoError(t, err)
	return string(b)
}

// TestUpstreamModeManifests applies upstream's example manifests of modes
// deployment (the default) and daemonset, with a disruption budget and an
// autoscaler, unchanged: each is accepted, reconciled to Ready and gets the
// workload of its mode and the objects that go with it.
func TestUpstreamModeManifests(t *testing.T) {
	t.Parallel()
	ns := "upstream-modes"
	h := start(t, ns)
	for _, tc := range []struct {
		file, name string
		mode       v1beta1.Mode
		workload   client.Object
		pdb, hpa   bool
	}{
		{"smoke-simplest.yaml", "simplest", v1beta1.ModeDeployment, &appsv1.Deployment{}, true, false},
		{"smoke-daemonset.yaml", "daemonset-test", v1beta1.ModeDaemonSet, &appsv1.DaemonSet{}, false, false},
		{"pdb-min-available.yaml", "pdb", v1beta1.ModeDeployment, &appsv1.Deployment{}, true, false},
		{"autoscale.yaml", "simplest-set-utilization", v1beta1.ModeDeployment, &appsv1.Deployment{}, true, true},
		{"pod-fields.yaml", "tuned", v1beta1.ModeDeployment, &appsv1.Deployment{}, true, true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, err := h.createYAML(t, ns, upstreamManifest(t, tc.file))
			require.NoError(t, err)
			c := h.waitReady(t, ns, tc.name, metav1.ConditionTrue)
			require.Equal(t, tc.mode, c.Spec.Mode)
			require.Equal(t, c.Generation, c.Status.ObservedGeneration)
			name := manifests.CollectorName(tc.name)
			h.get(t, ns, name, tc.workload)
			requireControlledBy(t, tc.workload, c)
			for _, svc := range []string{manifests.CollectorService(tc.name), manifests.HeadlessService(tc.name), manifests.MonitoringService(tc.name)} {
				var s corev1.Service
				h.get(t, ns, svc, &s)
				if tc.mode == v1beta1.ModeDaemonSet && svc != manifests.MonitoringService(tc.name) {
					require.Equal(t, corev1.ServiceInternalTrafficPolicyLocal, *s.Spec.InternalTrafficPolicy, svc)
				}
				if tc.name == "tuned" {
					require.Equal(t, []corev1.IPFamily{corev1.IPv4Protocol}, s.Spec.IPFamilies, svc)
					require.Equal(t, corev1.IPFamilyPolicySingleStack, *s.Spec.IPFamilyPolicy, svc)
					require.Equal(t, "PreferClose", ptr.Deref(s.Spec.TrafficDistribution, ""), svc)
				}
			}
			err = h.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &policyv1.PodDisruptionBudget{})
			require.Equal(t, tc.pdb, err == nil, "PodDisruptionBudget: %v", err)
			err = h.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &autoscalingv2.HorizontalPodAutoscaler{})
			require.Equal(t, tc.hpa, err == nil, "HorizontalPodAutoscaler: %v", err)
			require.NotEmpty(t, c.Status.Scale.Selector)
			require.Equal(t, "otel/opentelemetry-collector-contrib:0.165.0", c.Status.Image)
		})
	}
	// The StatefulSet is unchanged by the default: no StatefulSet for mode deployment.
	var list appsv1.StatefulSetList
	require.NoError(t, h.client.List(t.Context(), &list, client.InNamespace(ns)))
	require.Empty(t, list.Items)
}

// TestScaleStatusPerMode checks status.scale against the workload: the
// replicas of a Deployment, a DaemonSet's desired and ready pods (envtest
// runs no controllers, so the test writes the DaemonSet status a cluster
// would).
func TestScaleStatusPerMode(t *testing.T) {
	t.Parallel()
	ns := "scale-status"
	h := start(t, ns)
	doc := strings.Replace(upstreamManifest(t, "smoke-simplest.yaml"), "spec:\n", "spec:\n  replicas: 3\n", 1)
	_, err := h.createYAML(t, ns, doc)
	require.NoError(t, err)
	c := h.waitReady(t, ns, "simplest", metav1.ConditionTrue)
	require.Equal(t, int32(3), c.Status.Scale.Replicas)
	require.Equal(t, "0/3", c.Status.Scale.StatusReplicas)

	_, err = h.createYAML(t, ns, upstreamManifest(t, "smoke-daemonset.yaml"))
	require.NoError(t, err)
	h.waitReady(t, ns, "daemonset-test", metav1.ConditionTrue)
	var ds appsv1.DaemonSet
	h.get(t, ns, manifests.CollectorName("daemonset-test"), &ds)
	h.updateStatus(t, &ds, func() {
		ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, CurrentNumberScheduled: 2, NumberReady: 1, ObservedGeneration: ds.Generation}
	})
	eventually(t, waitFor, func() error {
		c := h.collector(t, ns, "daemonset-test")
		if got := c.Status.Scale.StatusReplicas; got != "1/2" {
			return fmt.Errorf("statusReplicas %q, want 1/2", got)
		}
		return nil
	})
}

// TestAutoscalerLifecycle checks that the HorizontalPodAutoscaler follows
// spec.autoscaler, scales the collector through its scale subresource, and
// that the workload runs at least the autoscaler's minimum.
func TestAutoscalerLifecycle(t *testing.T) {
	t.Parallel()
	ns := "autoscaler"
	h := start(t, ns)
	ctx := t.Context()
	const name = "simplest"
	_, err := h.createYAML(t, ns, upstreamManifest(t, "smoke-simplest.yaml"))
	require.NoError(t, err)
	h.waitReady(t, ns, name, metav1.ConditionTrue)
	hpaKey := client.ObjectKey{Namespace: ns, Name: manifests.CollectorName(name)}
	require.True(t, apierrors.IsNotFound(h.client.Get(ctx, hpaKey, &autoscalingv2.HorizontalPodAutoscaler{})))

	c := h.collector(t, ns, name)
	h.update(t, c, func() {
		c.Spec.Autoscaler = &v1beta1.AutoscalerSpec{MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](4)}
	})
	eventually(t, waitFor, func() error {
		var hpa autoscalingv2.HorizontalPodAutoscaler
		if err := h.client.Get(ctx, hpaKey, &hpa); err != nil {
			return err
		}
		if hpa.Spec.ScaleTargetRef.Kind != "OpenTelemetryCollector" || hpa.Spec.ScaleTargetRef.Name != name || hpa.Spec.MaxReplicas != 4 {
			return fmt.Errorf("autoscaler %+v", hpa.Spec)
		}
		var d appsv1.Deployment
		if err := h.client.Get(ctx, hpaKey, &d); err != nil {
			return err
		}
		if got := ptr.Deref(d.Spec.Replicas, 0); got != 2 {
			return fmt.Errorf("deployment replicas %d, want the autoscaler's minimum 2", got)
		}
		return nil
	})

	// What the autoscaler does: scale the collector through its scale subresource.
	h.scale(t, c, 3)
	eventually(t, waitFor, func() error {
		var d appsv1.Deployment
		if err := h.client.Get(ctx, hpaKey, &d); err != nil {
			return err
		}
		if got := ptr.Deref(d.Spec.Replicas, 0); got != 3 {
			return fmt.Errorf("deployment replicas %d, want 3", got)
		}
		sc := &autoscalingv1.Scale{}
		if err := h.client.SubResource("scale").Get(ctx, h.collector(t, ns, name), sc); err != nil {
			return err
		}
		if sc.Status.Replicas != 3 || sc.Status.Selector == "" {
			return fmt.Errorf("scale status %+v", sc.Status)
		}
		return nil
	})

	h.update(t, c, func() { c.Spec.Autoscaler = nil })
	eventually(t, waitFor, func() error {
		err := h.client.Get(ctx, hpaKey, &autoscalingv2.HorizontalPodAutoscaler{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return errors.Join(err, errors.New("autoscaler still there"))
	})
}

// TestModeRules checks the schema: the mode cannot change, and fields of one
// mode are refused in the others, each naming the field.
func TestModeRules(t *testing.T) {
	t.Parallel()
	ns := "mode-rules"
	h := start(t, ns)
	ctx := t.Context()
	_, err := h.createYAML(t, ns, upstreamManifest(t, "smoke-simplest.yaml"))
	require.NoError(t, err)
	c := h.collector(t, ns, "simplest")
	require.Equal(t, v1beta1.ModeDeployment, c.Spec.Mode, "the schema defaults mode to deployment")
	err = h.tryUpdate(ctx, c, func() { c.Spec.Mode = v1beta1.ModeDaemonSet })
	require.True(t, apierrors.IsInvalid(err), "want a schema rejection, got %v", err)
	require.Contains(t, err.Error(), "mode is set to deployment, which does not support modification")

	base := upstreamManifest(t, "smoke-simplest.yaml")
	for i, tc := range []struct{ name, mode, field, want string }{
		{"volumeClaimTemplates", "deployment", "volumeClaimTemplates: [{metadata: {name: x}, spec: {resources: {requests: {storage: 1Gi}}, accessModes: [ReadWriteOnce]}}]", "volumeClaimTemplates is only supported in mode statefulset"},
		{"daemonSetUpdateStrategy", "deployment", "daemonSetUpdateStrategy: {type: OnDelete}", "daemonSetUpdateStrategy is only supported in mode daemonset"},
		{"deploymentUpdateStrategy", "daemonset", "deploymentUpdateStrategy: {type: Recreate}", "deploymentUpdateStrategy is only supported in mode deployment"},
		{"sidecar tolerations", "sidecar", "tolerations: [{key: a, operator: Exists}]", "does not support the attribute 'tolerations'"},
		{"sidecar affinity", "sidecar", "affinity: {}", "does not support the attribute 'affinity'"},
		{"sidecar priorityClassName", "sidecar", "priorityClassName: high", "does not support the attribute 'priorityClassName'"},
		{"daemonset autoscaler", "daemonset", "autoscaler: {maxReplicas: 3}", "autoscaler is only supported in modes deployment and statefulset"},
		{"daemonset podDisruptionBudget", "daemonset", "podDisruptionBudget: {maxUnavailable: 1}", "podDisruptionBudget is only supported in modes deployment and statefulset"},
		{"minReplicas without maxReplicas", "deployment", "autoscaler: {minReplicas: 2}", "autoscaler.minReplicas needs autoscaler.maxReplicas"},
		{"replicas above maxReplicas", "deployment", "replicas: 5\n  autoscaler: {maxReplicas: 3}", "replicas must not exceed autoscaler.maxReplicas"},
		{"sidecar ingress", "sidecar", "ingress: {type: ingress, hostname: example.com}", "mode is set to sidecar, which does not support ingress"},
		{"resource metric", "deployment", "autoscaler: {maxReplicas: 3, metrics: [{type: Resource}]}", "autoscaler metrics support only type Pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(base, "spec:\n", fmt.Sprintf("spec:\n  mode: %s\n  %s\n", tc.mode, tc.field), 1)
			doc = strings.Replace(doc, "name: simplest", fmt.Sprintf("name: refused-%d", i), 1)
			_, err := h.createYAML(t, ns, doc)
			require.True(t, apierrors.IsInvalid(err), "want a schema rejection, got %v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestPruneWorkloadOfAnotherMode checks that a workload of another mode that
// the collector controls (left by an older operator) is deleted, and the
// collector's own workload kept.
func TestPruneWorkloadOfAnotherMode(t *testing.T) {
	t.Parallel()
	ns := "prune-mode"
	h := start(t, ns)
	ctx := t.Context()
	const name = "simplest"
	_, err := h.createYAML(t, ns, upstreamManifest(t, "smoke-simplest.yaml"))
	require.NoError(t, err)
	c := h.waitReady(t, ns, name, metav1.ConditionTrue)
	var d appsv1.Deployment
	h.get(t, ns, manifests.CollectorName(name), &d)

	sel := manifests.SelectorLabels(ns, name, manifests.ComponentCollector)
	stray := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: manifests.CollectorName(name), Labels: sel},
		Spec: appsv1.StatefulSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "otc-container", Image: "old"}}},
			},
		},
	}
	require.NoError(t, controllerutil.SetControllerReference(c, stray, h.scheme))
	require.NoError(t, h.client.Create(ctx, stray))
	eventually(t, waitFor, func() error {
		err := h.client.Get(ctx, client.ObjectKeyFromObject(stray), &appsv1.StatefulSet{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return errors.Join(err, errors.New("stray statefulset still there"))
	})
	var after appsv1.Deployment
	h.get(t, ns, d.Name, &after)
	require.Equal(t, d.UID, after.UID, "the collector's own Deployment is kept")
}

// TestSidecarMode checks that a sidecar-mode collector builds no workload and
// no Service, is Ready, and counts the pods carrying its injected label.
func TestSidecarMode(t *testing.T) {
	t.Parallel()
	ns := "sidecar-mode"
	h := startWith(t, managerOptions{namespaces: []string{ns}, podReader: true})
	ctx := t.Context()
	doc := strings.Replace(upstreamManifest(t, "smoke-simplest.yaml"), "spec:\n", "spec:\n  mode: sidecar\n", 1)
	// envtest runs no controller that creates the namespace's default account.
	err := h.client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}})
	require.True(t, err == nil || apierrors.IsAlreadyExists(err), "%v", err)
	for i := range 2 {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%d", i), Labels: map[string]string{manifests.LabelSidecarInjected: ns + ".simplest"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
		}
		require.NoError(t, h.client.Create(ctx, pod))
	}
	_, err = h.createYAML(t, ns, doc)
	require.NoError(t, err)
	c := h.waitReady(t, ns, "simplest", metav1.ConditionTrue)
	require.Equal(t, int32(2), c.Status.Scale.Replicas)
	require.Equal(t, manifests.LabelSidecarInjected+"="+ns+".simplest", c.Status.Scale.Selector)
	for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &appsv1.DaemonSetList{}, &appsv1.StatefulSetList{}, &corev1.ServiceList{}, &corev1.ConfigMapList{}} {
		require.NoError(t, h.client.List(ctx, list, client.InNamespace(ns)))
		items, err := meta.ExtractList(list)
		require.NoError(t, err)
		for _, item := range items {
			o, ok := item.(metav1.Object)
			require.True(t, ok)
			require.NotEqual(t, manifests.ManagedBy, o.GetLabels()[manifests.LabelManagedBy], "%T %s", o, o.GetName())
		}
	}
}

// TestUpstreamPodAndServiceFields: a collector with upstream's hostUsers,
// hostAliases, sessionAffinity and sessionAffinityConfig is stored with
// them (the schema pruned them before), reconciled Ready, and the API
// server takes the StatefulSet and the three Services built with them, the
// headless one included.
func TestUpstreamPodAndServiceFields(t *testing.T) {
	t.Parallel()
	ns := "upstream-fields"
	h := start(t, ns)
	_, err := h.createYAML(t, ns, `
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata: {name: fields}
spec:
  mode: statefulset
  hostUsers: false
  hostAliases: [{ip: 10.1.2.3, hostnames: [backend.internal]}]
  sessionAffinity: ClientIP
  sessionAffinityConfig: {clientIP: {timeoutSeconds: 600}}
  config:
    receivers: {otlp: {protocols: {grpc: {}}}}
    exporters: {debug: {}}
    service: {pipelines: {traces: {receivers: [otlp], exporters: [debug]}}}
`)
	require.NoError(t, err)
	c := h.waitReady(t, ns, "fields", metav1.ConditionTrue)
	require.Equal(t, corev1.ServiceAffinityClientIP, ptr.Deref(c.Spec.SessionAffinity, ""), "stored, not pruned")
	var sts appsv1.StatefulSet
	h.get(t, ns, "fields-collector", &sts)
	require.Equal(t, ptr.To(false), sts.Spec.Template.Spec.HostUsers)
	require.Equal(t, []string{"backend.internal"}, sts.Spec.Template.Spec.HostAliases[0].Hostnames)
	for _, name := range []string{"fields-collector", "fields-collector-headless", "fields-collector-monitoring"} {
		var svc corev1.Service
		h.get(t, ns, name, &svc)
		require.Equal(t, corev1.ServiceAffinityClientIP, svc.Spec.SessionAffinity, name)
		require.Equal(t, int32(600), *svc.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds, name)
	}
}
