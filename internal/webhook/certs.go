package webhook

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
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
	// The rotator reads its Secret through an informer over every Secret of
	// the namespace (it takes no cache options); scoped to the one Secret,
	// the operator's Role names it in resourceNames and reads no other.
	err := rotator.AddRotator(oneSecretManager{Manager: mgr, cfg: oneSecretConfig(mgr.GetConfig(), o.Secret)}, &rotator.CertRotator{
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

// oneSecretManager is a manager whose rest config is cfg: what the rotator
// builds its own cache from.
type oneSecretManager struct {
	manager.Manager
	cfg *rest.Config
}

func (m oneSecretManager) GetConfig() *rest.Config { return m.cfg }

// oneSecretConfig returns a copy of cfg whose list and watch requests for
// the Secrets of key's namespace select key's name alone (fieldSelector
// metadata.name), which RBAC authorizes against a rule's resourceNames.
func oneSecretConfig(cfg *rest.Config, key types.NamespacedName) *rest.Config {
	c := rest.CopyConfig(cfg)
	path := "/api/v1/namespaces/" + key.Namespace + "/secrets"
	selector := fields.OneTermEqualSelector("metadata.name", key.Name).String()
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, path) {
				q := req.URL.Query()
				if q.Get("fieldSelector") == "" {
					req = req.Clone(req.Context())
					q.Set("fieldSelector", selector)
					req.URL.RawQuery = q.Encode()
				}
			}
			return rt.RoundTrip(req)
		})
	})
	return c
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
