package allocator

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	commonconfig "github.com/prometheus/common/config"
	"go.yaml.in/yaml/v2"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
	"github.com/shardwise/shardwise/internal/weights"
)

// config is the allocator config file (allocatorconfig.File: the keys of
// the OpenTelemetry Operator's targetallocator.yaml plus ours, the type the
// operator renders) with the defaults and checks of this program.
type config struct {
	allocatorconfig.File
	// sum is the SHA-256 of the file's content this config was read from.
	sum []byte
	// collectorSelectorNull records `collector_selector: null` (or an empty
	// value): upstream reads it as every pod of the allocator's namespace.
	collectorSelectorNull bool
}

// notes are facts about the config in force worth a log line at load.
func (c *config) notes() []string {
	var out []string
	if c.Telemetry.Metrics != nil && len(c.Telemetry.Metrics.Readers) > 0 {
		out = append(out, "telemetry.metrics.readers is accepted but shardwise does not push its metrics over OTLP: scrape /metrics instead")
	}
	return out
}

// environment is what the allocator reads from its process environment, as
// the OpenTelemetry Operator's allocator does: the operator sets
// OTELCOL_NAMESPACE (the pod's namespace, from the downward API) and, on
// request, ALLOW_INSECURE_AUTH_SECRETS; a pod's own namespace is also in its
// service account's namespace file.
type environment struct {
	lookup        func(key string) (string, bool)
	namespaceFile string
}

// processEnvironment is the real one.
var processEnvironment = environment{
	lookup:        os.LookupEnv,
	namespaceFile: "/var/run/secrets/kubernetes.io/serviceaccount/namespace",
}

// ownNamespace is the allocator pod's namespace: $OTELCOL_NAMESPACE, else
// $POD_NAMESPACE, else the service account's namespace file; "" outside a pod.
func (e environment) ownNamespace() string {
	for _, k := range []string{"OTELCOL_NAMESPACE", "POD_NAMESPACE"} {
		if v, ok := e.lookup(k); ok && v != "" {
			return v
		}
	}
	if e.namespaceFile != "" {
		if b, err := os.ReadFile(e.namespaceFile); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return ""
}

// applyEnvironment gives the environment variables the upstream allocator
// reads their meaning. The file wins over the environment; flags win over
// both (applied later).
func (c *config) applyEnvironment(env environment) error {
	cc := &c.Discovery.Collector
	if cc.CollectorNamespace == "" {
		if ns, ok := env.lookup("OTELCOL_NAMESPACE"); ok && ns != "" {
			cc.CollectorNamespace = ns
		}
	}
	if v, ok := env.lookup("ALLOW_INSECURE_AUTH_SECRETS"); ok && v == "true" {
		c.AllowInsecureAuthSecrets = true
	}
	if c.collectorSelectorNull && len(cc.Collectors) == 0 && cc.CollectorNamespace == "" {
		// Every pod of the allocator's own namespace (a standalone
		// TargetAllocator's config, as upstream renders it).
		ns := env.ownNamespace()
		if ns == "" {
			return errors.New("collector_selector is null (every pod of the allocator's own namespace) but the namespace is unknown: set collector_namespace or $OTELCOL_NAMESPACE")
		}
		cc.CollectorNamespace = ns
	}
	return nil
}

// loadConfig reads the config file at path, applies the process environment
// and the flags and validates the result.
func loadConfig(path string, flags Flags) (*config, error) {
	return loadConfigEnv(path, flags, processEnvironment)
}

// loadConfigEnv is loadConfig with the given environment.
func loadConfigEnv(path string, flags Flags, env environment) (*config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c, err := parseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	sum := sha256.Sum256(b)
	c.sum = sum[:]
	// Relative file_sd paths and credential files resolve against the
	// config file's directory, as in Prometheus.
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	if pc := c.Discovery.PromConfig; pc != nil && pc.Config != nil {
		pc.SetDirectory(dir)
	}
	c.Weights.HTTPClientConfig.SetDirectory(dir)
	if err := c.applyEnvironment(env); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	if err := flags.apply(c); err != nil {
		return nil, fmt.Errorf("config file %s with flags: %w", path, err)
	}
	return c, nil
}

func parseConfig(b []byte) (*config, error) {
	f, err := allocatorconfig.Parse(b)
	if err != nil {
		return nil, err
	}
	c := config{File: *f}
	var top map[string]any
	if err := yaml.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	if sel, ok := top["collector_selector"]; ok && sel == nil {
		c.collectorSelectorNull = true
	}
	if err := c.Telemetry.Validate(); err != nil {
		return nil, err
	}
	if c.ResponseCacheBytes < 0 {
		return nil, fmt.Errorf("response_cache_bytes: negative (%d)", c.ResponseCacheBytes)
	}
	if c.ListenAddr == "" {
		c.ListenAddr = ":8080"
	}
	if c.AllocationStrategy == "" {
		c.AllocationStrategy = allocation.ConsistentHashing
	}
	if c.BalanceEpsilon == 0 {
		c.BalanceEpsilon = allocation.DefaultEpsilon
	}
	if c.Handoff.Settle == 0 {
		c.Handoff.Settle = allocatorconfig.DefaultHandoffSettle
	}
	if c.Handoff.Settle < 0 || c.Handoff.MaxOverlap < 0 {
		return nil, fmt.Errorf("handoff: settle and max_overlap must not be negative")
	}
	if err := c.checkWeights(); err != nil {
		return nil, err
	}
	if _, err := allocation.New(c.allocationOptions()); err != nil {
		return nil, err
	}
	if err := c.validateHTTPS(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Flags are the upstream allocator's command-line flags that override keys
// of the config file, for every load and reload. Zero values override nothing.
type Flags struct {
	ListenAddr      string // --listen-addr: listen_addr
	KubeConfigPath  string // --kubeconfig-path: kube_config_file_path
	PrometheusCR    bool   // --enable-prometheus-cr-watcher: prometheus_cr.enabled
	HTTPSEnabled    bool   // --enable-https-server: https.enabled
	HTTPSListenAddr string // --listen-addr-https: https.listen_addr
	HTTPSCAFile     string // --https-ca-file: https.ca_file_path
	HTTPSCertFile   string // --https-tls-cert-file: https.tls_cert_file_path
	HTTPSKeyFile    string // --https-tls-key-file: https.tls_key_file_path
	// AllowInsecureAuthSecrets: --allow-insecure-auth-secrets: allow_insecure_auth_secrets.
	AllowInsecureAuthSecrets bool
	EnablePprof              bool // --enable-pprof: enable_pprof (ours)
}

// apply overrides c with the flags that were set and checks the result.
func (f Flags) apply(c *config) error {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&c.ListenAddr, f.ListenAddr)
	set(&c.KubeConfigFilePath, f.KubeConfigPath)
	c.Discovery.PrometheusCR.Enabled = c.Discovery.PrometheusCR.Enabled || f.PrometheusCR
	c.HTTPS.Enabled = c.HTTPS.Enabled || f.HTTPSEnabled
	c.AllowInsecureAuthSecrets = c.AllowInsecureAuthSecrets || f.AllowInsecureAuthSecrets
	c.EnablePprof = c.EnablePprof || f.EnablePprof
	set(&c.HTTPS.ListenAddr, f.HTTPSListenAddr)
	set(&c.HTTPS.CAFilePath, f.HTTPSCAFile)
	set(&c.HTTPS.TLSCertFilePath, f.HTTPSCertFile)
	set(&c.HTTPS.TLSKeyFilePath, f.HTTPSKeyFile)
	return c.validateHTTPS()
}

func (c *config) validateHTTPS() error {
	if c.HTTPS.Enabled {
		var missing []string
		for k, v := range map[string]string{"ca_file_path": c.HTTPS.CAFilePath, "tls_cert_file_path": c.HTTPS.TLSCertFilePath, "tls_key_file_path": c.HTTPS.TLSKeyFilePath} {
			if v == "" {
				missing = append(missing, "https."+k)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			return errors.New("https is enabled but " + strings.Join(missing, ", ") + " not set")
		}
		if c.HTTPS.ListenAddr == "" {
			c.HTTPS.ListenAddr = ":8443"
		}
	}
	return nil
}

// learner is the weights learner the config asks for, nil without
// weights.query_url. Its client reads credential files relative to the
// config file's directory, so it is built once loadConfig has set it;
// parseConfig refuses a bad weights block with checkWeights.
func (c *config) learner(log *slog.Logger) (*weights.Learner, error) {
	if err := c.checkWeights(); err != nil || c.Weights.QueryURL == "" {
		return nil, err
	}
	wc := c.Weights
	client, err := commonconfig.NewClientFromConfig(wc.HTTPClientConfig, "shardwise-weights")
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	client.Timeout = 30 * time.Second
	l, err := weights.New(weights.Options{URL: wc.QueryURL, Query: wc.Query, Interval: wc.Interval, MaxChange: wc.MaxChange, Client: client, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("weights.query_url: %w", err)
	}
	return l, nil
}

// checkWeights refuses a weights block that can never work.
func (c *config) checkWeights() error {
	wc := c.Weights
	if wc.QueryURL == "" {
		return nil
	}
	if wc.Interval < 0 || wc.MaxChange < 0 {
		return errors.New("weights: interval and max_change must not be negative")
	}
	if _, err := weights.New(weights.Options{URL: wc.QueryURL}); err != nil {
		return fmt.Errorf("weights.query_url: %w", err)
	}
	if err := wc.HTTPClientConfig.Validate(); err != nil {
		return fmt.Errorf("weights: %w", err)
	}
	return nil
}

func (c *config) allocationOptions() allocation.Options {
	return allocation.Options{
		Strategy:         c.AllocationStrategy,
		FallbackStrategy: c.AllocationFallbackStrategy,
		Epsilon:          c.BalanceEpsilon,
	}
}
