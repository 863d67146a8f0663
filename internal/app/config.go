package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v2"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/discovery"
)

// config is the allocator config file: the keys of the OpenTelemetry
// Operator's targetallocator.yaml plus ours. The discovery keys (config,
// filter_strategy, prometheus_cr, collector_*) are parsed by package discovery.
type config struct {
	Discovery *discovery.Config `yaml:"-"`

	ListenAddr                 string      `yaml:"listen_addr,omitempty"`
	AllocationStrategy         string      `yaml:"allocation_strategy,omitempty"`
	AllocationFallbackStrategy string      `yaml:"allocation_fallback_strategy,omitempty"`
	AllowInsecureAuthSecrets   bool        `yaml:"allow_insecure_auth_secrets,omitempty"`
	HTTPS                      httpsConfig `yaml:"https,omitempty"`
	KubeConfigFilePath         string      `yaml:"kube_config_file_path,omitempty"`
	// BalanceEpsilon is ours: the load bound of consistent-hashing, no
	// collector holds more than ceil((1+ε)·T/N) targets.
	BalanceEpsilon float64 `yaml:"balance_epsilon,omitempty"`
}

// httpsConfig is the `https:` block: mutual TLS for collectors that need the
// real secrets of scrape configs.
type httpsConfig struct {
	Enabled         bool   `yaml:"enabled,omitempty"`
	ListenAddr      string `yaml:"listen_addr,omitempty"`
	CAFilePath      string `yaml:"ca_file_path,omitempty"`
	TLSCertFilePath string `yaml:"tls_cert_file_path,omitempty"`
	TLSKeyFilePath  string `yaml:"tls_key_file_path,omitempty"`
}

// ownKeys are the top-level keys this file reads itself; discoveryKeys are
// read by package discovery. Anything else is an error.
var (
	ownKeys = []string{
		"listen_addr", "allocation_strategy", "allocation_fallback_strategy",
		"allow_insecure_auth_secrets", "https", "kube_config_file_path", "balance_epsilon",
	}
	discoveryKeys = []string{
		"config", "filter_strategy", "prometheus_cr", "collector_namespace",
		"collector_selector", "collector_not_ready_grace_period", "collectors",
	}
)

// loadConfig reads the config file at path, applies the flags and validates
// the result.
func loadConfig(path string, flags Flags) (*config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c, err := parseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	// Relative file_sd paths and credential files resolve against the
	// config file's directory, as in Prometheus.
	if pc := c.Discovery.PromConfig; pc != nil && pc.Config != nil {
		dir, err := filepath.Abs(filepath.Dir(path))
		if err != nil {
			return nil, fmt.Errorf("config file %s: %w", path, err)
		}
		pc.SetDirectory(dir)
	}
	if err := flags.apply(c); err != nil {
		return nil, fmt.Errorf("config file %s with flags: %w", path, err)
	}
	return c, nil
}

func parseConfig(b []byte) (*config, error) {
	var top map[string]any
	if err := yaml.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	var unknown []string
	for k := range top {
		if !slices.Contains(ownKeys, k) && !slices.Contains(discoveryKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("unknown key %s (known: %s)", strings.Join(quote(unknown), ", "), strings.Join(append(slices.Clone(ownKeys), discoveryKeys...), ", "))
	}

	// Decode our keys one at a time so that an error names its key.
	var c config
	for _, k := range ownKeys {
		v, ok := top[k]
		if !ok {
			continue
		}
		one, err := yaml.Marshal(map[string]any{k: v})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		if err := yaml.UnmarshalStrict(one, &c); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	d, err := discovery.ParseConfig(b)
	if err != nil {
		return nil, err
	}
	c.Discovery = d
	if c.ListenAddr == "" {
		c.ListenAddr = ":8080"
	}
	if c.AllocationStrategy == "" {
		c.AllocationStrategy = allocation.ConsistentHashing
	}
	if c.BalanceEpsilon == 0 {
		c.BalanceEpsilon = allocation.DefaultEpsilon
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

func (c *config) allocationOptions() allocation.Options {
	return allocation.Options{
		Strategy:         c.AllocationStrategy,
		FallbackStrategy: c.AllocationFallbackStrategy,
		Epsilon:          c.BalanceEpsilon,
	}
}

func quote(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
