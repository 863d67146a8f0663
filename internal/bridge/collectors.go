package bridge

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests"
)

// Labels on OpenTelemetryCollectors, as upstream's.
const (
	// LabelManaged marks a collector the bridge reports and manages: its
	// value is "true" or the bridge's name.
	LabelManaged = "opentelemetry.io/opamp-managed"
	// LabelReporting marks a collector the bridge reports and never
	// modifies: its value is "true".
	LabelReporting = "opentelemetry.io/opamp-reporting"
	// LabelCreatedBy marks the collectors the bridge created from a remote
	// configuration; only those does it delete.
	LabelCreatedBy = "created-by"
	// CreatedByBridge is the value of LabelCreatedBy.
	CreatedByBridge = "operator-opamp-bridge"
)

// collector is one collector the bridge stands for.
type collector struct {
	obj     v1beta1.OpenTelemetryCollector
	managed bool // false: report only
}

func (c collector) key() string { return c.obj.Namespace + "/" + c.obj.Name }

// isManaged says whether labels make a collector managed by the bridge named name.
func isManaged(l map[string]string, name string) bool {
	if strings.EqualFold(l[LabelReporting], "true") {
		return false
	}
	v := l[LabelManaged]
	return strings.EqualFold(v, "true") || v == name
}

// isReporting says whether labels make a collector report-only.
func isReporting(l map[string]string) bool { return strings.EqualFold(l[LabelReporting], "true") }

// collectors lists the collectors the bridge stands for, sorted by key. A
// collector labelled both ways is report-only: never modify by doubt.
func (b *Bridge) collectors(ctx context.Context, r client.Reader) ([]collector, error) {
	managedReq, err := labels.NewRequirement(LabelManaged, selection.In, []string{"true", b.name})
	if err != nil {
		return nil, fmt.Errorf("managed selector: %w", err)
	}
	opts := func(sel labels.Selector) []client.ListOption {
		o := []client.ListOption{client.MatchingLabelsSelector{Selector: sel}}
		if b.namespace != "" {
			o = append(o, client.InNamespace(b.namespace))
		}
		return o
	}
	byKey := map[string]collector{}
	var managed v1beta1.OpenTelemetryCollectorList
	if err := r.List(ctx, &managed, opts(labels.NewSelector().Add(*managedReq))...); err != nil {
		return nil, fmt.Errorf("list managed collectors: %w", err)
	}
	for _, c := range managed.Items {
		byKey[c.Namespace+"/"+c.Name] = collector{obj: c, managed: !isReporting(c.Labels)}
	}
	var reporting v1beta1.OpenTelemetryCollectorList
	if err := r.List(ctx, &reporting, opts(labels.SelectorFromSet(labels.Set{LabelReporting: "true"}))...); err != nil {
		return nil, fmt.Errorf("list reporting collectors: %w", err)
	}
	for _, c := range reporting.Items {
		byKey[c.Namespace+"/"+c.Name] = collector{obj: c}
	}
	out := make([]collector, 0, len(byKey))
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		if byKey[k].obj.DeletionTimestamp.IsZero() {
			out = append(out, byKey[k])
		}
	}
	return out, nil
}

// effectiveConfig is the bridge's effective configuration: one YAML file
// per collector, its name, namespace and labels and the fields of its spec
// the server may set (Config.remoteFields), credentials in them redacted.
// Upstream reports the whole resource: every literal environment value, and
// kubectl's last-applied configuration among the annotations.
func (b *Bridge) effectiveConfig(ctx context.Context) (*protobufs.EffectiveConfig, error) {
	cs, err := b.collectors(ctx, b.reader)
	if err != nil {
		return nil, err
	}
	files := make(map[string]*protobufs.AgentConfigFile, len(cs))
	for _, c := range cs {
		spec, err := reportedSpec(&c.obj.Spec, b.cfg.remoteFields())
		if err != nil {
			return nil, fmt.Errorf("report collector %s: %w", c.key(), err)
		}
		obj := map[string]any{
			"apiVersion": v1beta1.GroupVersion.String(),
			"kind":       "OpenTelemetryCollector",
			"metadata":   map[string]any{"name": c.obj.Name, "namespace": c.obj.Namespace, "labels": c.obj.Labels},
			"spec":       spec,
		}
		body, err := yaml.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("marshal collector %s: %w", c.key(), err)
		}
		files[c.key()] = &protobufs.AgentConfigFile{Body: body, ContentType: "yaml"}
	}
	if b.proxy != nil {
		maps.Copy(files, b.proxy.configs())
	}
	return &protobufs.EffectiveConfig{ConfigMap: &protobufs.AgentConfigMap{ConfigMap: files}}, nil
}

// podSelector selects a collector's pods: the selector its status
// publishes, else the operator's selector labels.
func podSelector(c *v1beta1.OpenTelemetryCollector) labels.Selector {
	if s := c.Status.Scale.Selector; s != "" {
		if sel, err := labels.Parse(s); err == nil {
			return sel
		}
	}
	return labels.SelectorFromSet(manifests.SelectorLabels(c.Namespace, c.Name, manifests.ComponentCollector))
}

// health is the bridge's health: healthy itself, with one component per
// collector, healthy when it has pods and all of them run and are ready,
// and under it one component per pod.
func (b *Bridge) health(ctx context.Context) *protobufs.ComponentHealth {
	now := uint64(max(time.Now().UnixNano(), 0))
	root := &protobufs.ComponentHealth{
		Healthy:            true,
		StartTimeUnixNano:  b.startTime,
		StatusTimeUnixNano: now,
		Status:             "running",
		ComponentHealthMap: map[string]*protobufs.ComponentHealth{},
	}
	cs, err := b.collectors(ctx, b.reader)
	if err != nil {
		root.Healthy = false
		root.LastError = err.Error()
		return root
	}
	for _, c := range cs {
		ch := &protobufs.ComponentHealth{
			StartTimeUnixNano:  uint64(max(c.obj.CreationTimestamp.UnixNano(), 0)),
			StatusTimeUnixNano: now,
			ComponentHealthMap: map[string]*protobufs.ComponentHealth{},
		}
		root.ComponentHealthMap[c.key()] = ch
		var pods corev1.PodList
		if err := b.reader.List(ctx, &pods, client.InNamespace(c.obj.Namespace), client.MatchingLabelsSelector{Selector: podSelector(&c.obj)}); err != nil {
			ch.LastError = fmt.Sprintf("list pods: %v", err)
			continue
		}
		ready := 0
		for _, p := range pods.Items {
			ph := podHealth(&p, now)
			if ph.Healthy {
				ready++
			}
			ch.ComponentHealthMap[p.Namespace+"/"+p.Name] = ph
		}
		ch.Status = fmt.Sprintf("%d/%d", ready, len(pods.Items))
		ch.Healthy = len(pods.Items) > 0 && ready == len(pods.Items)
		if len(pods.Items) == 0 {
			ch.LastError = "no pods"
		}
	}
	if b.proxy != nil {
		b.proxy.addHealth(root)
	}
	return root
}

func podHealth(p *corev1.Pod, now uint64) *protobufs.ComponentHealth {
	h := &protobufs.ComponentHealth{Status: string(p.Status.Phase), StatusTimeUnixNano: now}
	if p.Status.StartTime != nil {
		h.StartTimeUnixNano = uint64(max(p.Status.StartTime.UnixNano(), 0))
	}
	ready := false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			ready = c.Status == corev1.ConditionTrue
			if !ready && c.Message != "" {
				h.LastError = c.Message
			}
		}
	}
	h.Healthy = p.Status.Phase == corev1.PodRunning && ready
	return h
}

// restart restarts every managed collector by stamping
// manifests.AnnotationRestartedAt on the collector resource; the operator
// copies it to the pod template of the collector's workload, which rolls its
// pods as kubectl rollout restart does. So the bridge needs no rights on
// workloads (upstream's bridge patches the Deployments and StatefulSets
// itself). Report-only and sidecar collectors are left alone.
func (b *Bridge) restart(ctx context.Context) error {
	cs, err := b.collectors(ctx, b.reader)
	if err != nil {
		return err
	}
	now := time.Now().UTC().Format(time.RFC3339)
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+manifests.AnnotationRestartedAt+`":"`+now+`"}}}`))
	var errs []error
	for _, c := range cs {
		if !c.managed || c.obj.Spec.Mode == v1beta1.ModeSidecar {
			continue
		}
		obj := &v1beta1.OpenTelemetryCollector{}
		obj.SetNamespace(c.obj.Namespace)
		obj.SetName(c.obj.Name)
		if err := b.client.Patch(ctx, obj, patch, client.FieldOwner(fieldOwner)); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("restart %s: %w", c.key(), err))
		}
	}
	return errors.Join(errs...)
}
