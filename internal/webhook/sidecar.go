package webhook

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/sidecar"
)

// +kubebuilder:rbac:groups=opentelemetry.io,resources=opentelemetrycollectors,verbs=get;list;watch

// SidecarMutator injects the collector sidecar. It goes before the
// instrumentation mutator, as upstream.
type SidecarMutator struct {
	// Reader is the manager's cache: OpenTelemetryCollectors, owner metadata.
	Reader client.Reader
	// APIReader reads an owner the cache has not seen yet.
	APIReader client.Reader
	Settings  sidecar.Settings
	Metrics   *SidecarMetrics
	// CrossNamespace decides <namespace>/<name> references.
	CrossNamespace CrossNamespace
}

var _ PodMutator = (*SidecarMutator)(nil)

// NewSidecarMutator returns the sidecar mutator reading through c (the
// manager's cache) and apiReader, with its metrics registered with reg.
// Whether the sidecar is native is settled here, once, from the API server's
// version (see NativeSidecarSupported).
func NewSidecarMutator(cfg *rest.Config, c, apiReader client.Reader, image string, reg prometheus.Registerer) (*SidecarMutator, error) {
	native, err := NativeSidecarSupported(cfg)
	if err != nil {
		return nil, err
	}
	m, err := NewSidecarMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &SidecarMutator{Reader: c, APIReader: apiReader, Settings: sidecar.Settings{Image: image, NativeSidecar: native}, Metrics: m}, nil
}

// nativeSidecarVersion is the first Kubernetes version with native sidecars
// on by default (beta in 1.29, stable in 1.33), upstream's threshold.
var nativeSidecarVersion = utilversion.MustParseGeneric("1.29.0")

// NativeSidecarSupported asks the API server for its version and reports
// whether it runs native sidecars (init containers with restartPolicy
// Always).
func NativeSidecarSupported(cfg *rest.Config) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, fmt.Errorf("discover the API server version: %w", err)
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return false, fmt.Errorf("discover the API server version: %w", err)
	}
	v, err := utilversion.ParseGeneric(info.GitVersion)
	if err != nil {
		return false, fmt.Errorf("parse the API server version %q: %w", info.GitVersion, err)
	}
	return v.AtLeast(nativeSidecarVersion), nil
}

// Name implements PodMutator.
func (m *SidecarMutator) Name() string { return "sidecar" }

// Mutate implements PodMutator. Whatever keeps a requested sidecar out of
// the pod is a finding; it never returns an error (it changes the pod only
// once it has everything it needs).
func (m *SidecarMutator) Mutate(ctx context.Context, ns *corev1.Namespace, pod *corev1.Pod) ([]Finding, error) {
	req := sidecar.Requested(ns.ObjectMeta, pod)
	if req.Action == sidecar.None {
		return nil, nil
	}
	in := sidecar.Input{Namespace: ns.ObjectMeta}
	var findings []Finding
	if req.Action == sidecar.Inject && !req.Malformed() && !sidecar.Present(pod) {
		in.Collector, in.Unresolved = m.resolve(ctx, req)
		if in.Collector != nil {
			if err := m.CrossNamespace.check("OpenTelemetryCollector", in.Collector, ns.Name); err != nil {
				in.Collector, in.Unresolved = nil, err
				if m.Metrics != nil {
					m.Metrics.crossNamespaceRefused.Inc()
				}
			}
		}
		if in.Collector != nil {
			chain, err := ownerChain(ctx, m.Reader, m.APIReader, ns.Name, pod.OwnerReferences)
			if err != nil {
				findings = append(findings, Finding{Reason: "SidecarOwnerLookupFailed", Message: fmt.Sprintf("%s: the owner chain could not be read, so the sidecar's OTEL_RESOURCE_ATTRIBUTES may lack k8s.* owner attributes: %v", req, err)})
			}
			for _, o := range chain {
				in.Owners = append(in.Owners, sidecar.Owner{Kind: o.Kind, Name: o.Name, UID: o.UID})
			}
		}
	}
	out := sidecar.Mutate(pod, in, m.Settings)
	if m.Metrics != nil {
		m.Metrics.injections.WithLabelValues(string(out.Result)).Inc()
	}
	switch out.Result {
	case sidecar.Injected, sidecar.AlreadyInjected, sidecar.OptedOut, sidecar.Removed, sidecar.NotRequested:
	default:
		findings = append(findings, Finding{Reason: "SidecarNotInjected", Message: fmt.Sprintf("%s: %s", out.Request, out.Reason)})
	}
	return findings, nil
}

// resolve finds the collector a request names (the cache's own object, not a
// copy: the pure mutator only reads it): for "true" the only sidecar-mode
// collector of the pod's namespace, else the named one, in another namespace
// if the value says so, as upstream.
//
// When the cache has nothing, the API server is asked: a collector applied
// together with its workload may not have reached the cache when the first
// pod is created.
func (m *SidecarMutator) resolve(ctx context.Context, req sidecar.Request) (*v1beta1.OpenTelemetryCollector, error) {
	if req.Name == "" {
		var list v1beta1.OpenTelemetryCollectorList
		if err := m.Reader.List(ctx, &list, client.InNamespace(req.Namespace), client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list OpenTelemetryCollectors in namespace %s: %w", req.Namespace, err)
		}
		c, err := sidecar.Choose(req.Namespace, list.Items)
		if errors.Is(err, sidecar.ErrNoCollector) && m.APIReader != nil {
			var fresh v1beta1.OpenTelemetryCollectorList
			if lerr := m.APIReader.List(ctx, &fresh, client.InNamespace(req.Namespace)); lerr != nil {
				return nil, fmt.Errorf("list OpenTelemetryCollectors in namespace %s: %w", req.Namespace, lerr)
			}
			c, err = sidecar.Choose(req.Namespace, fresh.Items)
		}
		return c, err
	}
	key := types.NamespacedName{Namespace: req.Namespace, Name: req.Name}
	c := &v1beta1.OpenTelemetryCollector{}
	err := m.Reader.Get(ctx, key, c, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) && m.APIReader != nil {
		err = m.APIReader.Get(ctx, key, c)
	}
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("OpenTelemetryCollector %s: %w", key, sidecar.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get OpenTelemetryCollector %s: %w", key, err)
	}
	return c, nil
}
