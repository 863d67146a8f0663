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

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	certmetrics "sigs.k8s.io/controller-runtime/pkg/certwatcher/metrics"
)

// certs serves the mutual-TLS configuration from HTTPSOptions' files. The
// key pair is controller-runtime's certwatcher's: once started it re-reads
// the pair when either file changes (fsnotify) and every 10 s, and keeps the
// last pair that parsed (it logs failures through controller-runtime's
// logger and counts them in certwatcher_read_certificate_errors_total, which
// New registers in the server's registry too).
// certwatcher knows no CA bundle, so the client CA file is read here at
// every handshake: collectors keep their connections alive, so handshakes
// are rare, the file is small, and it is parsed again only when its content
// changed.
type certs struct {
	opts HTTPSOptions
	log  *slog.Logger
	m    *metrics

	mu   sync.Mutex // guards the fields below
	pair *certwatcher.CertWatcher
	ca   []byte      // the CA file's content cfg was built from
	cfg  *tls.Config // nil until the first successful load
}

// newCerts checks the files, so that a bad certificate fails New rather than
// the first handshake. It starts nothing.
func newCerts(opts HTTPSOptions, log *slog.Logger, m *metrics) (*certs, error) {
	if _, err := tls.LoadX509KeyPair(opts.CertFile, opts.KeyFile); err != nil {
		return nil, fmt.Errorf("load key pair %s, %s: %w", opts.CertFile, opts.KeyFile, err)
	}
	ca, err := os.ReadFile(opts.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read ca file: %w", err)
	}
	if _, err := parseCAs(opts.CAFile, ca); err != nil {
		return nil, err
	}
	return &certs{opts: opts, log: log, m: m}, nil
}

// watcher loads the key pair into a certwatcher and returns it; the caller
// owns it and runs its Start until the listener closes. config serves
// handshakes from then on.
func (c *certs) watcher() (*certwatcher.CertWatcher, error) {
	w, err := certwatcher.New(c.opts.CertFile, c.opts.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("load key pair %s, %s: %w", c.opts.CertFile, c.opts.KeyFile, err)
	}
	// Called now with the pair just loaded, later (from a goroutine of
	// certwatcher's) with each new pair.
	w.RegisterCallback(func(tls.Certificate) {
		c.m.tlsReloads.WithLabelValues("success").Inc()
		c.log.Info("loaded https key pair", "cert", c.opts.CertFile, "key", c.opts.KeyFile)
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pair = w
	return w, nil
}

// config returns the TLS configuration of a handshake: the watched key pair,
// and the CAs of the CA file's current content. When the CA file cannot be
// read or parsed it keeps the last good pool and logs.
func (c *certs) config() (*tls.Config, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pair == nil {
		return nil, errors.New("https key pair not loaded")
	}
	ca, err := os.ReadFile(c.opts.CAFile)
	if err == nil && c.cfg != nil && bytes.Equal(ca, c.ca) {
		return c.cfg, nil
	}
	var pool *x509.CertPool
	if err == nil {
		pool, err = parseCAs(c.opts.CAFile, ca)
	} else {
		err = fmt.Errorf("read ca file: %w", err)
	}
	if err != nil {
		c.m.tlsReloads.WithLabelValues("failure").Inc()
		if c.cfg == nil {
			return nil, err
		}
		c.log.Error("reload https client CAs; keeping the previous ones", "err", err)
		return c.cfg, nil
	}
	c.cfg = &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: c.pair.GetCertificate,
		ClientCAs:      pool,
		ClientAuth:     tls.RequireAndVerifyClientCert,
		NextProtos:     []string{"http/1.1"},
	}
	c.ca = ca
	c.m.tlsReloads.WithLabelValues("success").Inc()
	c.log.Info("loaded https client CAs", "ca", c.opts.CAFile)
	return c.cfg, nil
}

// parseCAs returns the pool of the PEM certificates in ca, read from file.
func parseCAs(file string, ca []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("ca file " + file + " holds no PEM certificate")
	}
	return pool, nil
}

// registerCertwatcherMetrics registers certwatcher's counters of key pair
// reads and failed reads in reg: certwatcher counts them in
// controller-runtime's registry, which the allocator does not serve. They
// are process-wide, so a second server's registration is no error.
func registerCertwatcherMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{certmetrics.ReadCertificateTotal, certmetrics.ReadCertificateErrors} {
		var dup prometheus.AlreadyRegisteredError
		if err := reg.Register(c); err != nil && !errors.As(err, &dup) {
			return fmt.Errorf("register certwatcher metrics: %w", err)
		}
	}
	return nil
}
