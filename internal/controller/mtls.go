package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests"
)

// The operator creates cert-manager Issuers and Certificates for an allocator
// with spec.mtls (useCertManager, the default), as unstructured objects.
// +kubebuilder:rbac:groups=cert-manager.io,resources=issuers;certificates,verbs=get;list;watch;create;update;patch;delete

// ReasonCertManagerNotInstalled is the Ready reason of a resource whose mtls
// needs cert-manager while its API (cert-manager.io/v1) is not installed. The
// resource is checked again every certManagerRecheck, so installing
// cert-manager clears it.
const ReasonCertManagerNotInstalled = "CertManagerNotInstalled"

const certManagerRecheck = time.Minute

// certManagerKinds are the cert-manager kinds the operator builds.
var certManagerKinds = []schema.GroupVersionKind{
	manifests.CertManagerGroupVersion.WithKind("Issuer"),
	manifests.CertManagerGroupVersion.WithKind("Certificate"),
}

// certManagerAPI finds out whether cert-manager's API is installed. Its zero
// value is ready to use.
type certManagerAPI struct {
	// seen is set once the API was found: from then on the allocator
	// reconciler prunes cert-manager objects it no longer wants. Until then
	// there are none of its own to prune, and not listing them spares a
	// discovery round trip per reconcile in clusters without cert-manager.
	seen atomic.Bool
}

// installed reports whether the API server serves cert-manager's Issuer and
// Certificate. The REST mapper re-reads discovery for a kind it does not
// know, so an installation is noticed at the next call.
func (c *certManagerAPI) installed(mapper meta.RESTMapper) (bool, error) {
	for _, gvk := range certManagerKinds {
		_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("look up %s: %w", gvk, err)
		}
	}
	c.seen.Store(true)
	return true, nil
}

// certManagerMissing returns why an mtls setting cannot be served, or "":
// it needs cert-manager, which is not installed. field names the setting.
func (c *certManagerAPI) certManagerMissing(cl client.Client, m *v1beta1.TargetAllocatorMTLS, field string) (string, error) {
	if !m.CertManager() {
		return "", nil
	}
	ok, err := c.installed(cl.RESTMapper())
	if err != nil || ok {
		return "", err
	}
	return fmt.Sprintf("%s.enabled needs cert-manager (%s Issuer and Certificate), which is not installed: install cert-manager, or set %s.useCertManager to false and name the certificates in %s.tls",
		field, manifests.CertManagerGroupVersion, field, field), nil
}

// collectorsNaming maps a TargetAllocator to the collectors that name it
// with manifests.LabelTargetAllocator: its mtls settles how they poll it.
func collectorsNaming(cl client.Client) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list v1beta1.OpenTelemetryCollectorList
		if err := cl.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingLabels{manifests.LabelTargetAllocator: o.GetName()}); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for _, c := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
		}
		return out
	}
}
