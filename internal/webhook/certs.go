package webhook

import (
	"fmt"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// SelfManagedTLS says where the operator keeps its own serving certificate
// when no cert-manager is installed.
type SelfManagedTLS struct {
	// Secret holds ca.crt, ca.key, tls.crt and tls.key. It must exist (it
	// may be empty) and be mounted at CertDir.
	Secret types.NamespacedName
	// Service is the webhook Service in Secret's namespace; the certificate
	// is issued for <service>.<namespace>.svc(.cluster.local).
	Service string
	// CertDir is where the Secret is mounted.
	CertDir string
	// MutatingWebhookConfiguration gets the CA in its caBundle.
	MutatingWebhookConfiguration string
	// ConversionCRD, when set, is a CRD whose conversion webhook gets the CA
	// in its caBundle (CollectorCRD in the operator).
	ConversionCRD string
}

// CollectorCRD is the CRD whose conversion webhook the operator serves.
const CollectorCRD = "opentelemetrycollectors.opentelemetry.io"

// AddCertRotator adds open-policy-agent/cert-controller's rotator to mgr:
// it generates a CA and a serving certificate into the Secret, renews them
// before they expire and writes the CA into the webhook configuration's
// caBundle and the collector CRD's conversion webhook. The returned channel is closed once the certificate is mounted
// at CertDir and the CA injected: pass it to Setup as the gate.
func AddCertRotator(mgr manager.Manager, o SelfManagedTLS) (<-chan struct{}, error) {
	ready := make(chan struct{})
	dns := fmt.Sprintf("%s.%s.svc", o.Service, o.Secret.Namespace)
	webhooks := []rotator.WebhookInfo{{Name: o.MutatingWebhookConfiguration, Type: rotator.Mutating}}
	if o.ConversionCRD != "" {
		webhooks = append(webhooks, rotator.WebhookInfo{Name: o.ConversionCRD, Type: rotator.CRDConversion})
	}
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:            o.Secret,
		CertDir:              o.CertDir,
		CAName:               "shardwise-operator-ca",
		CAOrganization:       "shardwise",
		DNSName:              dns,
		ExtraDNSNames:        []string{dns + ".cluster.local"},
		IsReady:              ready,
		Webhooks:             webhooks,
		EnableReadinessCheck: true,
		// Every replica serves the webhook, so every replica keeps the
		// certificate fresh; writes are idempotent.
		RequireLeaderElection: false,
	})
	if err != nil {
		return nil, fmt.Errorf("add certificate rotator: %w", err)
	}
	return ready, nil
}
