package server

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
)

// certReloader builds the mutual-TLS configuration from files and rebuilds
// it when their content changes. It reads the files at every handshake:
// collectors keep their connections alive, so handshakes are rare, and
// reading three small files is cheaper and more reliable than watching
// Kubernetes' symlink-swapped secret volumes.
type certReloader struct {
	opts HTTPSOptions
	log  *slog.Logger
	m    *metrics

	mu   sync.Mutex // guards the fields below
	ca   []byte     // file contents the current cfg was built from
	cert []byte
	key  []byte
	cfg  *tls.Config // nil until the first successful load
}

func newCertReloader(opts HTTPSOptions, log *slog.Logger, m *metrics) *certReloader {
	return &certReloader{opts: opts, log: log, m: m}
}

// config returns the TLS configuration for the files' current content. When
// the files cannot be read or parsed it keeps the last good configuration and
// logs; it fails only when there has never been one.
func (r *certReloader) config() (*tls.Config, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cfg, err := r.reload()
	if err == nil {
		return cfg, nil
	}
	r.m.tlsReloads.WithLabelValues("failure").Inc()
	if r.cfg == nil {
		return nil, err
	}
	r.log.Error("reload https certificates; keeping the previous ones", "err", err)
	return r.cfg, nil
}

// reload reads the files and rebuilds the configuration if they changed.
// r.mu must be held.
func (r *certReloader) reload() (*tls.Config, error) {
	ca, err := os.ReadFile(r.opts.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read ca file: %w", err)
	}
	cert, err := os.ReadFile(r.opts.CertFile)
	if err != nil {
		return nil, fmt.Errorf("read certificate file: %w", err)
	}
	key, err := os.ReadFile(r.opts.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	if r.cfg != nil && bytes.Equal(ca, r.ca) && bytes.Equal(cert, r.cert) && bytes.Equal(key, r.key) {
		return r.cfg, nil
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("load key pair %s, %s: %w", r.opts.CertFile, r.opts.KeyFile, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("ca file " + r.opts.CAFile + " holds no PEM certificate")
	}
	r.cfg = &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{pair},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		NextProtos:   []string{"http/1.1"},
	}
	r.ca, r.cert, r.key = ca, cert, key
	r.m.tlsReloads.WithLabelValues("success").Inc()
	r.log.Info("loaded https certificates", "cert", r.opts.CertFile, "ca", r.opts.CAFile)
	return r.cfg, nil
}
