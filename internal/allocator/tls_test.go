package allocator

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testPKI is a throw-away CA with a server certificate for 127.0.0.1 and a
// client certificate, as cert-manager lays them out for the operator.
type testPKI struct {
	caPEM                 []byte
	serverCert, serverKey []byte
	clientCert, clientKey []byte
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	serial := func() *big.Int {
		n, err := rand.Int(rand.Reader, big.NewInt(1<<62))
		require.NoError(t, err)
		return n
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	leaf := func(name string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{
			SerialNumber: serial(), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		require.NoError(t, err)
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		require.NoError(t, err)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	}
	p := testPKI{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	p.serverCert, p.serverKey = leaf("allocator", x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = leaf("collector-0", x509.ExtKeyUsageClientAuth)
	return p
}

// client trusts the CA and presents the client certificate when withCert.
func (p testPKI) client(t *testing.T, withCert bool) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(p.caPEM))
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if withCert {
		pair, err := tls.X509KeyPair(p.clientCert, p.clientKey)
		require.NoError(t, err)
		cfg.Certificates = []tls.Certificate{pair}
	}
	tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestRunServesMutualTLS runs the allocator on the config the operator
// renders for spec.mtls (the upstream https block, files laid out as
// cert-manager's Secrets): the HTTPS listener requires a client certificate
// signed by the CA and serves the scrape configs' secrets to it; the plain
// port serves health and readiness but refuses the target API.
func TestRunServesMutualTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := newTestPKI(t)
	for name, b := range map[string][]byte{"ca.crt": p.caPEM, "tls.crt": p.serverCert, "tls.key": p.serverKey} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
	}
	httpsAddr := freePort(t)
	path := filepath.Join(dir, "ta.yaml")
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, `
listen_addr: 127.0.0.1:0
collectors: [collector-0]
https:
  enabled: true
  listen_addr: %s
  ca_file_path: %[2]s/ca.crt
  tls_cert_file_path: %[2]s/tls.crt
  tls_key_file_path: %[2]s/tls.key
config:
  scrape_configs:
    - job_name: secured
      basic_auth: {username: u, password: s3cret-password}
      static_configs:
        - targets: [a:1]
`, httpsAddr, dir), 0o600))
	base, _ := start(t, path)

	code, _ := status(t, base+"/readyz")
	require.Equal(t, http.StatusOK, code)
	code, body := status(t, base+"/scrape_configs")
	require.Equal(t, http.StatusForbidden, code)
	require.NotContains(t, body, "s3cret-password")
	code, _ = status(t, base+"/jobs/secured/targets?collector_id=collector-0")
	require.Equal(t, http.StatusForbidden, code)

	get := func(c *http.Client, path string) (int, string, error) {
		resp, err := c.Get("https://" + httpsAddr + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	_, _, err := get(p.client(t, false), "/scrape_configs")
	require.Error(t, err, "a client without a certificate is refused at the handshake")
	code, body, err = get(p.client(t, true), "/scrape_configs")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "s3cret-password", "secrets are served over mutual TLS")
	code, body, err = get(p.client(t, true), "/jobs/secured/targets?collector_id=collector-0")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "a:1")
}
