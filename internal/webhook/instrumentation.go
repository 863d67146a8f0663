package webhook

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/instrumentation"
)

// +kubebuilder:rbac:groups=opentelemetry.io,resources=instrumentations,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// InstrumentationMutator injects OpenTelemetry auto-instrumentation.
type InstrumentationMutator struct {
	// Reader is the manager's cache: Instrumentations, owner metadata.
	Reader client.Reader
	// APIReader reads what the cache does not hold yet (an owner created a
	// moment ago) and the exporter's TLS Secret and ConfigMap, which are not
	// cached cluster-wide.
	APIReader client.Reader
	Settings  instrumentation.Settings
	Metrics   *Metrics
	// CrossNamespace decides <namespace>/<name> references.
	CrossNamespace CrossNamespace
}

var _ PodMutator = (*InstrumentationMutator)(nil)

// Name implements PodMutator.
func (m *InstrumentationMutator) Name() string { return "instrumentation" }

// Mutate implements PodMutator. It reports every language that could not be
// injected; it returns an error only if the pod itself is unusable.
func (m *InstrumentationMutator) Mutate(ctx context.Context, ns *corev1.Namespace, pod *corev1.Pod) ([]Finding, error) {
	reqs := instrumentation.Requests(ns.ObjectMeta, pod)
	if len(reqs) == 0 {
		return nil, nil
	}
	in := instrumentation.Input{
		Namespace:        ns.ObjectMeta,
		Instrumentations: map[instrumentation.Language]*v1alpha1.Instrumentation{},
		Unresolved:       map[instrumentation.Language]string{},
	}
	var findings []Finding
	for _, r := range reqs {
		if !m.Settings.Enabled[r.Language] {
			continue
		}
		inst, err := m.resolve(ctx, ns.Name, r.Value)
		if err == nil {
			if err = m.CrossNamespace.check("Instrumentation", inst, ns.Name); err != nil && m.Metrics != nil {
				m.Metrics.crossNamespaceRefused.WithLabelValues(string(r.Language)).Inc()
			}
		}
		if err == nil {
			err = m.checkTLS(ctx, ns.Name, inst)
		}
		if err != nil {
			in.Unresolved[r.Language] = err.Error()
			continue
		}
		in.Instrumentations[r.Language] = inst
	}
	if len(in.Instrumentations) > 0 {
		var err error
		in.Owners, err = m.owners(ctx, ns.Name, pod.OwnerReferences)
		if err != nil {
			findings = append(findings, Finding{Reason: "InstrumentationOwnerLookupFailed", Message: fmt.Sprintf("the owner chain could not be read, so OTEL_SERVICE_NAME and k8s.* attributes may be incomplete: %v", err)})
		}
	}
	for _, o := range instrumentation.Mutate(pod, in, m.Settings) {
		if m.Metrics != nil {
			m.Metrics.injections.WithLabelValues(string(o.Language), string(o.Result)).Inc()
		}
		if f, ok := finding(o); ok {
			findings = append(findings, f)
		}
	}
	return findings, nil
}

func finding(o instrumentation.Outcome) (Finding, bool) {
	switch {
	case o.Result == instrumentation.Injected && o.Reason == "":
		return Finding{}, false
	case o.Result == instrumentation.AlreadyInjected:
		return Finding{}, false
	case o.Result == instrumentation.Injected:
		return Finding{Reason: "InstrumentationPartiallyInjected", Message: fmt.Sprintf("%s=%q: %s injected, but %s", o.Annotation, o.Value, o.Language, o.Reason)}, true
	case o.Result == instrumentation.Disabled:
		return Finding{Reason: "InstrumentationRequestRejected", Message: fmt.Sprintf("%s=%q: %s", o.Annotation, o.Value, o.Reason)}, true
	default:
		return Finding{Reason: "InstrumentationNotInjected", Message: fmt.Sprintf("%s=%q: %s not injected (%s): %s", o.Annotation, o.Value, o.Language, o.Result, o.Reason)}, true
	}
}

// resolve finds the Instrumentation an annotation value names (the cache's
// own object, not a copy: the pure mutator only reads it): "true" is the
// only one in the pod's namespace, "<name>" one in the pod's namespace,
// "<namespace>/<name>" one elsewhere.
func (m *InstrumentationMutator) resolve(ctx context.Context, podNamespace, value string) (*v1alpha1.Instrumentation, error) {
	if strings.EqualFold(value, "true") {
		var list v1alpha1.InstrumentationList
		if err := m.Reader.List(ctx, &list, client.InNamespace(podNamespace), client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list Instrumentations in namespace %s: %w", podNamespace, err)
		}
		switch len(list.Items) {
		case 0:
			return nil, fmt.Errorf("no OpenTelemetry Instrumentation instances available in namespace %s", podNamespace)
		case 1:
			return &list.Items[0], nil
		default:
			return nil, fmt.Errorf("multiple OpenTelemetry Instrumentation instances available in namespace %s, cannot determine which one to select; name one in the annotation", podNamespace)
		}
	}
	key := types.NamespacedName{Namespace: podNamespace, Name: value}
	if nsName, name, ok := strings.Cut(value, "/"); ok {
		key = types.NamespacedName{Namespace: nsName, Name: name}
	}
	inst := &v1alpha1.Instrumentation{}
	if err := m.Reader.Get(ctx, key, inst, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("instrumentation %s not found", key)
		}
		return nil, fmt.Errorf("get Instrumentation %s: %w", key, err)
	}
	return inst, nil
}

// checkTLS checks that the exporter's Secret and ConfigMap exist in the
// pod's namespace: without them the pod would not start.
func (m *InstrumentationMutator) checkTLS(ctx context.Context, podNamespace string, inst *v1alpha1.Instrumentation) error {
	tls := inst.Spec.Exporter.TLS
	if tls == nil {
		return nil
	}
	check := func(kind, name string) error {
		if name == "" {
			return nil
		}
		obj := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind}}
		if err := m.APIReader.Get(ctx, types.NamespacedName{Namespace: podNamespace, Name: name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("instrumentation %s/%s: exporter TLS %s %s/%s does not exist", inst.Namespace, inst.Name, kind, podNamespace, name)
			}
			if apierrors.IsForbidden(err) {
				// The operator holds no Secret permission (README, Security
				// model): what it may not read, it does not check; the
				// kubelet reports a missing volume source on the pod.
				return nil
			}
			return fmt.Errorf("instrumentation %s/%s: read exporter TLS %s %s/%s: %w", inst.Namespace, inst.Name, kind, podNamespace, name, err)
		}
		return nil
	}
	if err := check("Secret", tls.SecretName); err != nil {
		return err
	}
	return check("ConfigMap", tls.ConfigMapName)
}

// owners is the pod's owner chain for the instrumentation mutator.
func (m *InstrumentationMutator) owners(ctx context.Context, namespace string, refs []metav1.OwnerReference) ([]instrumentation.Owner, error) {
	chain, err := ownerChain(ctx, m.Reader, m.APIReader, namespace, refs)
	out := make([]instrumentation.Owner, len(chain))
	for i, o := range chain {
		out[i] = instrumentation.Owner{Kind: o.Kind, Name: o.Name, UID: o.UID}
	}
	return out, err
}
