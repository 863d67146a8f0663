package controller

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests"
)

// A collector with observability.metrics.enableMetrics gets a ServiceMonitor
// (a PodMonitor in mode sidecar) when prometheus-operator's API is served.
// Server-side apply needs create and patch, the prune list and delete, the
// apply memo get; watch is there for the allocators the operator grants it to.
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors;podmonitors,verbs=get;list;watch;create;patch;delete

// ConditionMetricsMonitor reports, for a collector with
// observability.metrics.enableMetrics, whether its ServiceMonitor or
// PodMonitor is applied. It is absent otherwise.
const ConditionMetricsMonitor = "MetricsMonitor"

// Reasons of ConditionMetricsMonitor.
const (
	ReasonMonitorApplied                 = "Applied"
	ReasonPrometheusOperatorNotInstalled = "PrometheusOperatorNotInstalled"
)

// monitorKinds are prometheus-operator's kinds a collector may own.
var monitorKinds = []schema.GroupVersionKind{
	manifests.MonitoringGroupVersion.WithKind("ServiceMonitor"),
	manifests.MonitoringGroupVersion.WithKind("PodMonitor"),
}

// Intervals of the polling that stands in for a watch on prometheus-operator's
// kinds, which the operator does not watch since their API may come and go.
const (
	// defaultMonitoringRecheck is CollectorReconciler.MonitoringRecheck's
	// default.
	defaultMonitoringRecheck = time.Minute
	// monitorResync is how often a collector with enableMetrics re-applies
	// its monitor, restoring one deleted or edited by hand.
	monitorResync = 10 * time.Minute
)

// monitoringAPI finds out whether the API server serves prometheus-operator's
// kinds. Its zero value is ready to use.
type monitoringAPI struct {
	mu sync.Mutex // guards absent
	// absent holds, per kind found not served, when it was found so. The
	// answer is believed for a while (the recheck interval), so that collectors in a
	// cluster without prometheus-operator do not cost a discovery round trip
	// per reconcile.
	absent map[schema.GroupVersionKind]time.Time
}

// served reports whether the API server serves gvk. The REST mapper re-reads
// discovery for a kind it does not know, so an installation is noticed within
// recheck.
func (m *monitoringAPI) served(mapper meta.RESTMapper, gvk schema.GroupVersionKind, recheck time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if at, ok := m.absent[gvk]; ok && time.Since(at) < recheck {
		return false, nil
	}
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		if m.absent == nil {
			m.absent = map[schema.GroupVersionKind]time.Time{}
		}
		m.absent[gvk] = time.Now()
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look up %s: %w", gvk, err)
	}
	delete(m.absent, gvk)
	return true, nil
}

// servedKinds returns those of kinds that are served.
func (m *monitoringAPI) servedKinds(mapper meta.RESTMapper, kinds []schema.GroupVersionKind, recheck time.Duration) ([]schema.GroupVersionKind, error) {
	var out []schema.GroupVersionKind
	for _, gvk := range kinds {
		ok, err := m.served(mapper, gvk, recheck)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, gvk)
		}
	}
	return out, nil
}

// dropUnservedMonitors removes from desired the monitors whose API is not
// served, and returns why ("" when it removed none): everything else is
// still applied.
func (r *CollectorReconciler) dropUnservedMonitors(desired *manifests.Collector) (string, error) {
	kept, missing, err := r.monitoring.dropUnserved(r.Client.RESTMapper(), desired.Objects, r.monitoringRecheck())
	desired.Objects = kept
	return missing, err
}

// dropUnserved returns objs without the prometheus-operator objects whose
// API is not served, and why ("" when it dropped none).
func (m *monitoringAPI) dropUnserved(mapper meta.RESTMapper, objs []client.Object, recheck time.Duration) ([]client.Object, string, error) {
	var missing []string
	kept := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		gvk := o.GetObjectKind().GroupVersionKind()
		if gvk.Group != manifests.MonitoringGroupVersion.Group {
			kept = append(kept, o)
			continue
		}
		ok, err := m.served(mapper, gvk, recheck)
		if err != nil {
			return objs, "", err
		}
		if !ok {
			if !slices.Contains(missing, gvk.Kind) {
				missing = append(missing, gvk.Kind)
			}
			continue
		}
		kept = append(kept, o)
	}
	if len(missing) == 0 {
		return kept, "", nil
	}
	return kept, fmt.Sprintf("observability.metrics.enableMetrics needs prometheus-operator's %s (%s), which is not installed: install prometheus-operator's CRDs, or set enableMetrics to false; every other object is applied",
		strings.Join(missing, " and "), manifests.MonitoringGroupVersion), nil
}

// setMonitorCondition records ConditionMetricsMonitor: absent without
// enableMetrics, False with missing (why the monitor is not created, with a
// Warning event when that is news), True otherwise.
func (r *CollectorReconciler) setMonitorCondition(c *v1beta1.OpenTelemetryCollector, missing string) {
	applied := "ServiceMonitor " + manifests.MonitoringServiceMonitor(c.Name) + " is applied"
	if manifests.ModeOf(c) == v1beta1.ModeSidecar {
		applied = "PodMonitor " + manifests.SidecarPodMonitor(c.Name) + " is applied"
	}
	setMonitorCondition(r.Recorder, c, &c.Status.Conditions, c.Spec.Observability.Metrics.EnableMetrics, missing, applied)
}

// setMonitorCondition records ConditionMetricsMonitor on obj's conditions:
// absent unless enabled, False with missing (with a Warning event when that
// is news), else True with applied.
func setMonitorCondition(rec events.EventRecorder, obj client.Object, conds *[]metav1.Condition, enabled bool, missing, applied string) {
	if !enabled {
		meta.RemoveStatusCondition(conds, ConditionMetricsMonitor)
		return
	}
	cond := metav1.Condition{Type: ConditionMetricsMonitor, ObservedGeneration: obj.GetGeneration()}
	if missing != "" {
		warnIfNews(rec, obj, *conds, ConditionMetricsMonitor, ReasonPrometheusOperatorNotInstalled, missing)
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonPrometheusOperatorNotInstalled, missing
	} else {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, ReasonMonitorApplied, applied
	}
	meta.SetStatusCondition(conds, cond)
}

// pruneKinds are the kinds the reconcile prunes: the collector's own, and
// prometheus-operator's where served.
func (r *CollectorReconciler) pruneKinds() ([]schema.GroupVersionKind, error) {
	served, err := r.monitoring.servedKinds(r.Client.RESTMapper(), monitorKinds, r.monitoringRecheck())
	if err != nil {
		return nil, err
	}
	return append(slices.Clone(collectorKinds), served...), nil
}

// monitoringRecheck is MonitoringRecheck or its default.
func (r *CollectorReconciler) monitoringRecheck() time.Duration {
	if r.MonitoringRecheck > 0 {
		return r.MonitoringRecheck
	}
	return defaultMonitoringRecheck
}
