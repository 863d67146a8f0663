package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// CertChecker is a readiness check that fails until dir holds a serving
// certificate and key that load and are valid now. Together with the
// webhook server's StartedChecker it keeps the operator unready while its
// webhook cannot serve TLS, instead of a webhook that never fires and never
// says so. now is nil for time.Now.
func CertChecker(dir, certName, keyName string, now func() time.Time) healthz.Checker {
	if certName == "" {
		certName = "tls.crt"
	}
	if keyName == "" {
		keyName = "tls.key"
	}
	if now == nil {
		now = time.Now
	}
	return func(*http.Request) error {
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, certName), filepath.Join(dir, keyName))
		if err != nil {
			return fmt.Errorf("webhook serving certificate: %w", err)
		}
		if len(pair.Certificate) == 0 {
			return errors.New("webhook serving certificate: empty chain")
		}
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			return fmt.Errorf("webhook serving certificate: %w", err)
		}
		t := now()
		if t.Before(leaf.NotBefore) || t.After(leaf.NotAfter) {
			return fmt.Errorf("webhook serving certificate is valid from %s to %s, not now", leaf.NotBefore.Format(time.RFC3339), leaf.NotAfter.Format(time.RFC3339))
		}
		return nil
	}
}
