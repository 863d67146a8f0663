package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/testenv"
)

// TestMetricsMonitors applies upstream's e2e manifests with
// observability.metrics.enableMetrics (a deployment with prometheus
// exporters, and a sidecar) with the operator running as a user holding
// exactly the generated config/rbac/role.yaml. Without prometheus-operator's
// CRDs everything else is applied and a MetricsMonitor condition and a
// Warning event name what is missing; once the CRDs are installed the
// ServiceMonitors select the right Services and the PodMonitor is created;
// turning enableMetrics off prunes them.
//
// The test installs prometheus-operator's CRDs into the shared API server:
// no other test may depend on their absence.
func TestMetricsMonitors(t *testing.T) {
	t.Parallel()
	const ns, sidecarNS, user = "metrics", "metrics-sidecar", "shardwise-operator-metrics"
	cfg := testenv.Require(t, env)
	admin := startClient(t)
	role := installRBAC(t, admin, "role.yaml", user)
	ctx := t.Context()
	err := admin.client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	h := startWith(t, managerOptions{namespaces: []string{ns, sidecarNS}, config: impersonate(cfg, user), monitoringRecheck: 200 * time.Millisecond})
	const name = "simplest"
	_, err = h.createYAML(t, ns, upstreamManifest(t, "metrics-servicemonitor.yaml"))
	require.NoError(t, err)
	_, err = h.createYAML(t, sidecarNS, upstreamManifest(t, "metrics-podmonitor.yaml"))
	require.NoError(t, err)

	_, err = h.client.RESTMapper().RESTMapping(manifests.MonitoringGroupVersion.WithKind("ServiceMonitor").GroupKind(), "v1")
	if meta.IsNoMatchError(err) {
		for _, tc := range []struct{ ns, kind string }{{ns, "ServiceMonitor"}, {sidecarNS, "PodMonitor"}} {
			c := h.waitReady(t, tc.ns, name, metav1.ConditionTrue)
			cond := waitMonitorCondition(t, h, tc.ns, name, metav1.ConditionFalse)
			require.Equal(t, controller.ReasonPrometheusOperatorNotInstalled, cond.Reason)
			require.Contains(t, cond.Message, "prometheus-operator's "+tc.kind+" (monitoring.coreos.com/v1), which is not installed")
			require.Contains(t, meta.FindStatusCondition(c.Status.Conditions, controller.ConditionReady).Message, controller.ConditionMetricsMonitor)
			requireWarningEvent(t, h, tc.ns, name, controller.ReasonPrometheusOperatorNotInstalled)
		}
		// Everything else is applied.
		var d appsv1.Deployment
		h.get(t, ns, manifests.CollectorName(name), &d)
		var svc corev1.Service
		h.get(t, ns, manifests.MonitoringService(name), &svc)

		_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{testenv.MonitoringCRDs()}})
		require.NoError(t, err)
	} else {
		require.NoError(t, err)
		t.Log("prometheus-operator's CRDs are already installed: the check of their absence is skipped")
	}

	// The CRDs are served: the operator notices by polling, with no event.
	for _, n := range []string{ns, sidecarNS} {
		cond := waitMonitorCondition(t, h, n, name, metav1.ConditionTrue)
		require.Equal(t, controller.ReasonMonitorApplied, cond.Reason)
	}
	c := h.collector(t, ns, name)
	own := getMonitor(t, h, "ServiceMonitor", ns, manifests.MonitoringServiceMonitor(name))
	requireControlledBy(t, own, c)
	require.Equal(t, []string{manifests.MonitoringService(name)}, selectedServices(t, h, ns, own))
	require.Equal(t, []any{map[string]any{"port": "monitoring"}}, own.Object["spec"].(map[string]any)["endpoints"])
	exporters := getMonitor(t, h, "ServiceMonitor", ns, manifests.ExporterServiceMonitor(name))
	requireControlledBy(t, exporters, c)
	require.Equal(t, []string{manifests.CollectorService(name)}, selectedServices(t, h, ns, exporters))
	var base corev1.Service
	h.get(t, ns, manifests.CollectorService(name), &base)
	for _, e := range exporters.Object["spec"].(map[string]any)["endpoints"].([]any) {
		port := e.(map[string]any)["port"]
		require.Contains(t, servicePortNames(base), port, "the base Service has the port the ServiceMonitor scrapes")
	}
	pm := getMonitor(t, h, "PodMonitor", sidecarNS, manifests.SidecarPodMonitor(name))
	requireControlledBy(t, pm, h.collector(t, sidecarNS, name))

	// enableMetrics off: the monitors go, and so does the condition.
	for _, n := range []string{ns, sidecarNS} {
		c := h.collector(t, n, name)
		h.update(t, c, func() { c.Spec.Observability.Metrics.EnableMetrics = false })
	}
	eventually(t, waitFor, func() error {
		for _, m := range []struct{ kind, ns, name string }{
			{"ServiceMonitor", ns, manifests.MonitoringServiceMonitor(name)},
			{"ServiceMonitor", ns, manifests.ExporterServiceMonitor(name)},
			{"PodMonitor", sidecarNS, manifests.SidecarPodMonitor(name)},
		} {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(manifests.MonitoringGroupVersion.WithKind(m.kind))
			err := h.client.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: m.name}, u)
			if err == nil {
				return fmt.Errorf("%s %s/%s still there", m.kind, m.ns, m.name)
			}
			if !apierrors.IsNotFound(err) {
				return err
			}
		}
		for _, n := range []string{ns, sidecarNS} {
			if cond := meta.FindStatusCondition(h.collector(t, n, name).Status.Conditions, controller.ConditionMetricsMonitor); cond != nil {
				return fmt.Errorf("%s/%s still has condition %s", n, name, cond.Type)
			}
		}
		return nil
	})
}

// waitMonitorCondition waits for the collector's MetricsMonitor condition of
// the current generation to have status want.
func waitMonitorCondition(t *testing.T, h harness, ns, name string, want metav1.ConditionStatus) *metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	eventually(t, waitFor, func() error {
		c := h.collector(t, ns, name)
		got = meta.FindStatusCondition(c.Status.Conditions, controller.ConditionMetricsMonitor)
		if got == nil || got.ObservedGeneration != c.Generation || got.Status != want {
			return fmt.Errorf("%s/%s: condition %s is %+v, want status %s", ns, name, controller.ConditionMetricsMonitor, got, want)
		}
		return nil
	})
	return got
}

// requireWarningEvent waits for a Warning event with reason on the resource ns/name.
func requireWarningEvent(t *testing.T, h harness, ns, name, reason string) {
	t.Helper()
	eventually(t, waitFor, func() error {
		var list eventsv1.EventList
		if err := h.client.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Type == corev1.EventTypeWarning && e.Reason == reason {
				return nil
			}
		}
		return fmt.Errorf("no %s Warning event on %s/%s yet", reason, ns, name)
	})
}

func getMonitor(t *testing.T, h harness, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(manifests.MonitoringGroupVersion.WithKind(kind))
	eventually(t, waitFor, func() error {
		return h.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, u)
	})
	return u
}

// selectedServices are the names of the Services of ns a ServiceMonitor's
// selector matches, as prometheus-operator would select them.
func selectedServices(t *testing.T, h harness, ns string, sm *unstructured.Unstructured) []string {
	t.Helper()
	matchLabels, found, err := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	require.NoError(t, err)
	require.True(t, found)
	var list corev1.ServiceList
	require.NoError(t, h.client.List(t.Context(), &list, client.InNamespace(ns), client.MatchingLabels(matchLabels)))
	var out []string
	for _, s := range list.Items {
		out = append(out, s.Name)
	}
	return out
}

func servicePortNames(s corev1.Service) []any {
	var out []any
	for _, p := range s.Spec.Ports {
		out = append(out, p.Name)
	}
	return out
}

// TestPrometheusAnnotations checks, on the API server, that the collector
// pods carry the prometheus.io annotations and the resource's own
// annotations, and that disablePrometheusAnnotations removes the former from
// the live Deployment.
func TestPrometheusAnnotations(t *testing.T) {
	t.Parallel()
	ns := "prometheus-annotations"
	h := start(t, ns)
	doc := strings.Replace(upstreamManifest(t, "smoke-simplest.yaml"), "  name: simplest\n", "  name: simplest\n  annotations:\n    team: a\n", 1)
	_, err := h.createYAML(t, ns, doc)
	require.NoError(t, err)
	h.waitReady(t, ns, "simplest", metav1.ConditionTrue)
	var d appsv1.Deployment
	h.get(t, ns, manifests.CollectorName("simplest"), &d)
	a := d.Spec.Template.Annotations
	require.Equal(t, "true", a[manifests.AnnotationPrometheusScrape])
	require.Equal(t, "8888", a[manifests.AnnotationPrometheusPort])
	require.Equal(t, "/metrics", a[manifests.AnnotationPrometheusPath])
	require.Equal(t, "a", a["team"])

	c := h.collector(t, ns, "simplest")
	h.update(t, c, func() { c.Spec.Observability.Metrics.DisablePrometheusAnnotations = true })
	eventually(t, waitFor, func() error {
		if err := h.client.Get(t.Context(), client.ObjectKeyFromObject(&d), &d); err != nil {
			return err
		}
		for _, k := range []string{manifests.AnnotationPrometheusScrape, manifests.AnnotationPrometheusPort, manifests.AnnotationPrometheusPath, manifests.AnnotationPrometheusAdded} {
			if v, ok := d.Spec.Template.Annotations[k]; ok {
				return fmt.Errorf("pod template still has %s=%s", k, v)
			}
		}
		return nil
	})
	require.Equal(t, "a", d.Spec.Template.Annotations["team"])
}
