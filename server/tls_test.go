package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	certmetrics "sigs.k8s.io/controller-runtime/pkg/certwatcher/metrics"
)

// testCA is a throw-away certificate authority.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func nextSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	return n
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          nextSerial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a leaf certificate and key in PEM, and the leaf's serial.
func (ca *testCA) issue(t *testing.T, name string, server bool) (certPEM, keyPEM []byte, sn *big.Int) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), tmpl.SerialNumber
}

// writeAtomic replaces a file as Kubernetes' secret volumes do: write aside,
// rename over.
func writeAtomic(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, data, 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// mtlsClient trusts ca and presents the given client certificate; every
// request opens a new connection, so a new handshake.
func mtlsClient(t *testing.T, ca *testCA, certPEM, keyPEM []byte) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certPEM != nil {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		require.NoError(t, err)
		cfg.Certificates = []tls.Certificate{pair}
	}
	tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// runServer runs s until the test ends and returns its addresses.
func runServer(t *testing.T, s *Server) (httpURL, httpsURL string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("Run did not return after cancellation")
		}
	})
	wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer wcancel()
	h, hs, err := s.Addrs(wctx)
	require.NoError(t, err)
	httpURL = "http://" + h.String()
	if hs != nil {
		httpsURL = "https://" + hs.String()
	}
	return httpURL, httpsURL
}

func fetch(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp, string(b)
}

func TestMutualTLSSecretsAndReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	caFile, certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ca := newCA(t, "ca-1")
	srvCert, srvKey, srvSerial := ca.issue(t, "allocator", true)
	cliCert, cliKey, _ := ca.issue(t, "collector-0", false)
	writeAtomic(t, caFile, ca.pem)
	writeAtomic(t, certFile, srvCert)
	writeAtomic(t, keyFile, srvKey)

	src := &fakeConfigs{m: loadFixture(t, fixtureYAML), ready: true}
	s := newServer(t, newAllocator(t, 2, mkJobs(5, "a")), src, func(o *Options) {
		o.ListenAddr = "127.0.0.1:0"
		o.HTTPS = &HTTPSOptions{ListenAddr: "127.0.0.1:0", CAFile: caFile, CertFile: certFile, KeyFile: keyFile}
		o.Logger = testLogger(t)
	})
	httpURL, httpsURL := runServer(t, s)
	require.NotEmpty(t, httpsURL)

	// Plain HTTP: health, readiness and metrics only; the target API is
	// refused, secrets and discovered labels with it.
	plain := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	for _, path := range []string{"/livez", "/readyz", "/metrics"} {
		resp, _ := fetch(t, plain, httpURL+path)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	for _, path := range []string{"/scrape_configs", "/jobs", "/jobs/a/targets?collector_id=collector-0", "/jobs/a/targets", "/"} {
		resp, body := fetch(t, plain, httpURL+path)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, path)
		require.Contains(t, body, "only over mutual TLS", path)
		for _, sec := range fixtureSecrets {
			require.NotContains(t, body, sec)
		}
	}

	// Mutual TLS: the real values, and the rest of the API too.
	client := mtlsClient(t, ca, cliCert, cliKey)
	resp, body := fetch(t, client, httpsURL+"/scrape_configs")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, srvSerial, resp.TLS.PeerCertificates[0].SerialNumber)
	for _, sec := range fixtureSecrets {
		require.Contains(t, body, sec)
	}
	resp, _ = fetch(t, client, httpsURL+"/jobs/a/targets?collector_id=collector-0")
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// No client certificate, or one from another CA: no connection.
	_, err := mtlsClient(t, ca, nil, nil).Get(httpsURL + "/scrape_configs")
	require.Error(t, err)
	other := newCA(t, "other")
	oc, ok, _ := other.issue(t, "intruder", false)
	_, err = mtlsClient(t, ca, oc, ok).Get(httpsURL + "/scrape_configs")
	require.Error(t, err)

	// Rotate everything to a new CA: the CA file is read at the next
	// handshake, the key pair as soon as the watcher sees the files change.
	ca2 := newCA(t, "ca-2")
	srvCert2, srvKey2, srvSerial2 := ca2.issue(t, "allocator", true)
	cliCert2, cliKey2, _ := ca2.issue(t, "collector-0", false)
	writeAtomic(t, caFile, ca2.pem)
	writeAtomic(t, keyFile, srvKey2)
	writeAtomic(t, certFile, srvCert2)
	client2 := mtlsClient(t, ca2, cliCert2, cliKey2)
	require.Eventually(t, func() bool {
		resp, err := client2.Get(httpsURL + "/livez")
		if err != nil {
			return false // until the server presents a certificate of ca-2
		}
		return resp.Body.Close() == nil
	}, 30*time.Second, 20*time.Millisecond, "the rotated key pair is served")
	resp, body = fetch(t, client2, httpsURL+"/scrape_configs")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, srvSerial2, resp.TLS.PeerCertificates[0].SerialNumber)
	require.Contains(t, body, "basic-s3cret")
	_, err = client.Get(httpsURL + "/scrape_configs")
	require.Error(t, err, "the old CA no longer verifies the server nor signs accepted clients")

	// A broken file keeps the last good configuration, once the watcher has
	// tried it.
	failed := testutil.ToFloat64(certmetrics.ReadCertificateErrors)
	writeAtomic(t, certFile, []byte("not a certificate"))
	require.Eventually(t, func() bool { return testutil.ToFloat64(certmetrics.ReadCertificateErrors) > failed },
		30*time.Second, 20*time.Millisecond, "the watcher reads the broken file")
	resp, _ = fetch(t, client2, httpsURL+"/livez")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, srvSerial2, resp.TLS.PeerCertificates[0].SerialNumber)
	_, body = fetch(t, client2, httpsURL+"/metrics")
	require.Contains(t, body, "certwatcher_read_certificate_errors_total", "the server serves certwatcher's counters")
}

// TestPlainHTTPAPI keeps the upstream behaviour on request: with HTTPS on
// and HTTPSOptions.PlainHTTPAPI, the plain listener serves the target API
// with secrets redacted.
func TestPlainHTTPAPI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	caFile, certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ca := newCA(t, "ca")
	srvCert, srvKey, _ := ca.issue(t, "allocator", true)
	writeAtomic(t, caFile, ca.pem)
	writeAtomic(t, certFile, srvCert)
	writeAtomic(t, keyFile, srvKey)
	src := &fakeConfigs{m: loadFixture(t, fixtureYAML), ready: true}
	s := newServer(t, newAllocator(t, 2, mkJobs(5, "a")), src, func(o *Options) {
		o.ListenAddr = "127.0.0.1:0"
		o.HTTPS = &HTTPSOptions{ListenAddr: "127.0.0.1:0", CAFile: caFile, CertFile: certFile, KeyFile: keyFile, PlainHTTPAPI: true}
	})
	httpURL, _ := runServer(t, s)
	plain := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, body := fetch(t, plain, httpURL+"/scrape_configs")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, sec := range fixtureSecrets {
		require.NotContains(t, body, sec)
	}
	require.Contains(t, body, secretToken)
	resp, _ = fetch(t, plain, httpURL+"/jobs/a/targets?collector_id=collector-0")
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestNewRejectsBadCertificates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	_, err := New(Options{Assignments: newAllocator(t, 1, nil), HTTPS: &HTTPSOptions{CAFile: missing, CertFile: missing, KeyFile: missing}})
	require.Error(t, err)
	_, err = New(Options{})
	require.Error(t, err, "Assignments is required")
}

func TestRunStopsOnCancel(t *testing.T) {
	t.Parallel()
	s := newServer(t, newAllocator(t, 1, nil), nil, func(o *Options) { o.ListenAddr = "127.0.0.1:0" })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer wcancel()
	h, hs, err := s.Addrs(wctx)
	require.NoError(t, err)
	require.Nil(t, hs)
	plain := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, _ := fetch(t, plain, "http://"+h.String()+"/livez")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Error(t, s.Run(ctx), "Run twice")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return")
	}
	_, err = plain.Get("http://" + h.String() + "/livez")
	require.Error(t, err, "listener closed")

	// Stopped before it started: nothing to serve, no error.
	stopped, stop := context.WithCancel(t.Context())
	stop()
	require.NoError(t, newServer(t, newAllocator(t, 1, nil), nil, func(o *Options) { o.ListenAddr = "127.0.0.1:0" }).Run(stopped))

	// A busy address is an error from Run.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	busy := newServer(t, newAllocator(t, 1, nil), nil, func(o *Options) { o.ListenAddr = ln.Addr().String() })
	require.Error(t, busy.Run(t.Context()))
}
