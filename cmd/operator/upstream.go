package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v2"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The upstream OpenTelemetry Operator v0.158 defines its flags in
// internal/config/cli.go, cmd/operator/operator.go (--config-file,
// --feature-gates) and controller-runtime's zap options; its Helm chart and
// users' Deployments pass them. shardwise accepts every one of them, so an
// upstream Deployment's args never make the operator exit: a flag is an
// alias of ours, implemented here, or accepted with one log line saying why
// it has no effect. docs/operator-flags.md is the table for users;
// TestOperatorFlagsDoc keeps it in step with this file.

// upstreamFlag is one upstream flag that shardwise does not define under the
// same name and meaning.
type upstreamFlag struct {
	name string
	// boolean is set for flags that take no value (--name alone is true).
	boolean bool
	// alias is shardwise's flag of the same meaning: the upstream name sets it.
	alias string
	// noEffect says why the flag changes nothing in shardwise; logged when set.
	noEffect string
}

var upstreamFlags = []upstreamFlag{
	{name: "metrics-addr", alias: "metrics-bind-address"},
	{name: "health-probe-addr", alias: "health-probe-bind-address"},
	{name: "enable-leader-election", boolean: true, alias: "leader-elect"},
	{name: "operator-opamp-bridge-image", alias: "opamp-bridge-image"},
	{name: "openshift-create-dashboard", boolean: true, noEffect: "shardwise builds no OpenShift console dashboards"},
	{name: "openshift-webhook-replicas", noEffect: "the pod webhook is served by the operator itself, not by a separate Deployment"},
	{name: "create-sm-operator-metrics", boolean: true, noEffect: "the operator creates no ServiceMonitor for itself; point one at its metrics Service"},
	{name: "ignore-missing-collector-crds", boolean: true, noEffect: "shardwise's CRDs are installed with it, and it needs them"},
	{name: "clusterobservability-collector-image", noEffect: "shardwise has no ClusterObservability resource"},
	{name: "fips-disabled-components", noEffect: "shardwise does not check collector components against FIPS"},
	{name: "tls-cluster-profile", boolean: true, noEffect: "OpenShift's cluster TLS profile is not read; use --tls-min-version and --tls-cipher-suites"},
	{name: "tls-configure-operands", boolean: true, noEffect: "the TLS settings apply to the operator's own webhook and metrics servers only"},
	{name: "zap-message-key", noEffect: "logs are log/slog's: the message is under msg"},
	{name: "zap-level-key", noEffect: "logs are log/slog's: the level is under level"},
	{name: "zap-time-key", noEffect: "logs are log/slog's: the time is under time"},
	{name: "zap-level-format", noEffect: "levels are log/slog's upper-case names (DEBUG, INFO, WARN, ERROR)"},
}

// upstreamEnv maps the environment variables the upstream operator reads
// (internal/config/env.go) to the flags they set. A flag given on the
// command line wins, as upstream.
var upstreamEnv = map[string]string{
	"RELATED_IMAGE_COLLECTOR":                         "collector-image",
	"RELATED_IMAGE_TARGET_ALLOCATOR":                  "target-allocator-image",
	"RELATED_IMAGE_OPERATOR_OPAMP_BRIDGE":             "opamp-bridge-image",
	"RELATED_IMAGE_AUTO_INSTRUMENTATION_JAVA":         "auto-instrumentation-java-image",
	"RELATED_IMAGE_AUTO_INSTRUMENTATION_NODEJS":       "auto-instrumentation-nodejs-image",
	"RELATED_IMAGE_AUTO_INSTRUMENTATION_PYTHON":       "auto-instrumentation-python-image",
	"RELATED_IMAGE_AUTO_INSTRUMENTATION_DOTNET":       "auto-instrumentation-dotnet-image",
	"RELATED_IMAGE_AUTO_INSTRUMENTATION_GO":           "auto-instrumentation-go-image",
	"RELATED_IMAGE_AUTO_INSTRUMENTATION_APACHE_HTTPD": "auto-instrumentation-apache-httpd-image",
	"RELATED_IMAGE_AUTO_INSTRUMENTATION_NGINX":        "auto-instrumentation-nginx-image",
	"OPENSHIFT_CREATE_DASHBOARD":                      "openshift-create-dashboard",
	"METRICS_ADDR":                                    "metrics-bind-address",
	"METRICS_SECURE":                                  "metrics-secure",
	"METRICS_TLS_CERT_FILE":                           "metrics-tls-cert-file",
	"METRICS_TLS_KEY_FILE":                            "metrics-tls-key-file",
	"HEALTH_PROBE_ADDR":                               "health-probe-bind-address",
	"PPROF_ADDR":                                      "pprof-addr",
	"ENABLE_LEADER_ELECTION":                          "leader-elect",
	"ENABLE_CR_METRICS":                               "enable-cr-metrics",
	"CREATE_SM_OPERATOR_METRICS":                      "create-sm-operator-metrics",
	"WEBHOOK_PORT":                                    "webhook-port",
	"FIPS_DISABLED_COMPONENTS":                        "fips-disabled-components",
	"TLS_CLUSTER_PROFILE":                             "tls-cluster-profile",
	"TLS_CONFIGURE_OPERANDS":                          "tls-configure-operands",
	"TLS_MIN_VERSION":                                 "tls-min-version",
	"TLS_CIPHER_SUITES":                               "tls-cipher-suites",
	"LABELS_FILTER":                                   "labels-filter",
	"ANNOTATIONS_FILTER":                              "annotations-filter",
	"ZAP_TIME_KEY":                                    "zap-time-key",
	"ZAP_LEVEL_FORMAT":                                "zap-level-format",
	"ZAP_LEVEL_KEY":                                   "zap-level-key",
	"ZAP_MESSAGE_KEY":                                 "zap-message-key",
	"ENABLE_JAVA_AUTO_INSTRUMENTATION":                "enable-java-instrumentation",
	"ENABLE_NODEJS_AUTO_INSTRUMENTATION":              "enable-nodejs-instrumentation",
	"ENABLE_DOTNET_AUTO_INSTRUMENTATION":              "enable-dotnet-instrumentation",
	"ENABLE_GO_AUTO_INSTRUMENTATION":                  "enable-go-instrumentation",
	"ENABLE_NGINX_AUTO_INSTRUMENTATION":               "enable-nginx-instrumentation",
	"ENABLE_APACHE_HTTPD_AUTO_INSTRUMENTATION":        "enable-apache-httpd-instrumentation",
	"ENABLE_PYTHON_AUTO_INSTRUMENTATION":              "enable-python-instrumentation",
	"IGNORE_MISSING_COLLECTOR_CRDS":                   "ignore-missing-collector-crds",
	"ENABLE_WEBHOOKS":                                 "enable-webhooks",
	"FEATURE_GATES":                                   "feature-gates",
	"ENABLE_MULTI_INSTRUMENTATION":                    "enable-multi-instrumentation",
	"WATCH_NAMESPACE":                                 "watch-namespace",
	"OPENSHIFT_WEBHOOK_REPLICAS":                      "openshift-webhook-replicas",
}

// upstreamFileKeys maps the keys of the upstream operator's --config-file
// (the yaml tags of its internal/config.Config) to the flags they set. Keys
// it does not list are reported as having no effect.
var upstreamFileKeys = map[string]string{
	"collector-image":                         "collector-image",
	"targetallocator-image":                   "target-allocator-image",
	"operatoropampbridge-image":               "opamp-bridge-image",
	"auto-instrumentation-java-image":         "auto-instrumentation-java-image",
	"auto-instrumentation-node-js-image":      "auto-instrumentation-nodejs-image",
	"auto-instrumentation-python-image":       "auto-instrumentation-python-image",
	"auto-instrumentation-dot-net-image":      "auto-instrumentation-dotnet-image",
	"auto-instrumentation-go-image":           "auto-instrumentation-go-image",
	"auto-instrumentation-apache-httpd-image": "auto-instrumentation-apache-httpd-image",
	"auto-instrumentation-nginx-image":        "auto-instrumentation-nginx-image",
	"enable-multi-instrumentation":            "enable-multi-instrumentation",
	"enable-apache-httpd-instrumentation":     "enable-apache-httpd-instrumentation",
	"enable-dot-net-auto-instrumentation":     "enable-dotnet-instrumentation",
	"enable-go-auto-instrumentation":          "enable-go-instrumentation",
	"enable-nginx-auto-instrumentation":       "enable-nginx-instrumentation",
	"enable-python-auto-instrumentation":      "enable-python-instrumentation",
	"enable-node-js-auto-instrumentation":     "enable-nodejs-instrumentation",
	"enable-java-auto-instrumentation":        "enable-java-instrumentation",
	"metrics-addr":                            "metrics-bind-address",
	"metrics-secure":                          "metrics-secure",
	"metrics-tls-cert-file":                   "metrics-tls-cert-file",
	"metrics-tls-key-file":                    "metrics-tls-key-file",
	"health-probe-addr":                       "health-probe-bind-address",
	"pprof-addr":                              "pprof-addr",
	"enable-leader-election":                  "leader-elect",
	"webhook-port":                            "webhook-port",
	"enable-webhooks":                         "enable-webhooks",
	"watch-namespace":                         "watch-namespace",
	"feature-gates":                           "feature-gates",
	"labels-filter":                           "labels-filter",
	"annotations-filter":                      "annotations-filter",
}

// upstreamGates are the feature gates of the upstream operator v0.158
// (pkg/featuregate/featuregate.go) and what shardwise does in their place.
var upstreamGates = map[string]string{
	"operator.golang.flags":                       "always on: collectors get GOMEMLIMIT and GOMAXPROCS from their resource limits",
	"operator.targetallocator.fallbackstrategy":   "the allocator honours allocation_fallback_strategy with per-node; the operator does not write it",
	"operator.networkpolicy":                      "no effect: shardwise creates no NetworkPolicy for the operator itself",
	"operand.networkpolicy":                       "no effect: a collector gets a NetworkPolicy when its networkPolicy.enabled is true",
	"operator.clusterobservability":               "no effect: shardwise has no ClusterObservability resource",
	"operator.collector.usedefaulttelemetryshape": "no effect: the operator adds no telemetry reader to the collector's configuration",
}

// noEffectValue is the value of an upstream flag that has no effect in
// shardwise: it records that the flag was given (on the command line, in the
// config file or the environment), so the flag is logged once.
type noEffectValue struct {
	boolean bool
	value   string
	seen    *[]string
	name    string
}

func (v *noEffectValue) String() string { return v.value }

func (v *noEffectValue) Set(s string) error {
	v.value = s
	if !slices.Contains(*v.seen, v.name) {
		*v.seen = append(*v.seen, v.name)
	}
	return nil
}

func (v *noEffectValue) IsBoolFlag() bool { return v.boolean }

// upstreamOptions are the upstream flags that shardwise implements beyond
// its own, and what was set without effect.
type upstreamOptions struct {
	configFile string
	// featureGates are --feature-gates' entries: gate name to enabled.
	featureGates  map[string]bool
	pprofAddr     string
	tlsMinVersion string
	tlsCiphers    []string
	metricsSecure bool
	metricsCert   string
	metricsKey    string
	// noEffect are the flags set that change nothing here, in the order set.
	noEffect []string
	// fileKeysIgnored are --config-file keys that change nothing here.
	fileKeysIgnored []string
}

func (u *upstreamOptions) addFlags(fs *flag.FlagSet) {
	for _, f := range upstreamFlags {
		if f.alias != "" {
			target := fs.Lookup(f.alias)
			if target == nil {
				panic("upstream flag " + f.name + " aliases undefined --" + f.alias)
			}
			fs.Var(target.Value, f.name, "The upstream operator's name for --"+f.alias+".")
			continue
		}
		fs.Var(&noEffectValue{boolean: f.boolean, seen: &u.noEffect, name: f.name}, f.name, "Accepted from the upstream operator; no effect: "+f.noEffect+".")
	}
	fs.StringVar(&u.configFile, "config-file", "", "The upstream operator's config file (YAML): its keys set the flags they name; the command line and upstream's environment variables win.")
	fs.Func("feature-gates", "Upstream feature gates, comma-separated (gate, +gate, -gate, gate=true|false): each is logged with what shardwise does in its place.", func(v string) error {
		gates, err := parseFeatureGates(v)
		if err != nil {
			return err
		}
		if u.featureGates == nil {
			u.featureGates = map[string]bool{}
		}
		for g, on := range gates {
			u.featureGates[g] = on
		}
		return nil
	})
	fs.StringVar(&u.pprofAddr, "pprof-addr", "", "Address of the pprof server; empty disables it.")
	fs.StringVar(&u.tlsMinVersion, "tls-min-version", "VersionTLS12", "Minimum TLS version of the webhook and metrics servers: VersionTLS12 or VersionTLS13 (crypto/tls constant names).")
	fs.Func("tls-cipher-suites", "Comma-separated cipher suites of the webhook and metrics servers for TLS 1.2 (crypto/tls constant names); empty means Go's defaults.", func(v string) error {
		u.tlsCiphers = nil
		for _, c := range strings.Split(v, ",") {
			if c = strings.TrimSpace(c); c != "" {
				u.tlsCiphers = append(u.tlsCiphers, c)
			}
		}
		return nil
	})
	fs.BoolVar(&u.metricsSecure, "metrics-secure", false, "Serve metrics over HTTPS, only to clients a TokenReview authenticates and a SubjectAccessReview allows to get /metrics.")
	fs.StringVar(&u.metricsCert, "metrics-tls-cert-file", "", "Certificate of the secure metrics server; with neither file, a self-signed certificate is generated.")
	fs.StringVar(&u.metricsKey, "metrics-tls-key-file", "", "Key of the secure metrics server.")
}

// parseFeatureGates reads upstream's --feature-gates syntax.
func parseFeatureGates(v string) (map[string]bool, error) {
	gates := map[string]bool{}
	for _, g := range strings.Split(v, ",") {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		on := true
		switch {
		case strings.HasPrefix(g, "+"):
			g = g[1:]
		case strings.HasPrefix(g, "-"):
			g, on = g[1:], false
		case strings.Contains(g, "="):
			name, val, _ := strings.Cut(g, "=")
			b, err := strconv.ParseBool(val)
			if err != nil {
				return nil, fmt.Errorf("feature gate %q: %q is not true or false", name, val)
			}
			g, on = name, b
		}
		if g == "" {
			return nil, errors.New("a feature gate has no name")
		}
		gates[g] = on
	}
	return gates, nil
}

// applyFileAndEnv sets, for every flag not given on the command line, the
// value upstream's environment variables or --config-file give it; the
// environment wins over the file, as upstream applies it later.
func applyFileAndEnv(fs *flag.FlagSet, u *upstreamOptions, getenv func(string) (string, bool)) error {
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	set := func(name, value, from string) error {
		if onCommandLine[name] {
			return nil
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("%s: --%s: %w", from, name, err)
		}
		return nil
	}
	if u.configFile != "" {
		values, ignored, err := readUpstreamConfigFile(u.configFile)
		if err != nil {
			return err
		}
		u.fileKeysIgnored = ignored
		for _, kv := range values {
			if err := set(kv[0], kv[1], u.configFile); err != nil {
				return err
			}
		}
	}
	for _, env := range slices.Sorted(maps.Keys(upstreamEnv)) {
		if v, ok := getenv(env); ok {
			if err := set(upstreamEnv[env], v, "$"+env); err != nil {
				return err
			}
		}
	}
	return nil
}

// readUpstreamConfigFile returns the flag settings of an upstream operator
// config file, in key order, and the keys that have no effect here.
func readUpstreamConfigFile(path string) (values [][2]string, ignored []string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read --config-file: %w", err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("parse --config-file %s: %w", path, err)
	}
	for _, key := range slices.Sorted(maps.Keys(doc)) {
		name, ok := upstreamFileKeys[key]
		if !ok {
			ignored = append(ignored, key)
			continue
		}
		v, err := flagValue(doc[key])
		if err != nil {
			return nil, nil, fmt.Errorf("--config-file %s: key %s: %w", path, key, err)
		}
		values = append(values, [2]string{name, v})
	}
	return values, ignored, nil
}

// flagValue renders a YAML scalar or list as a flag value (lists joined
// by commas, as the list flags take them).
func flagValue(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string, bool, int, int64, float64:
		return fmt.Sprint(v), nil
	case []any:
		parts := make([]string, 0, len(v))
		for _, e := range v {
			s, err := flagValue(e)
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ","), nil
	default:
		return "", fmt.Errorf("want a scalar or a list, got %T", v)
	}
}

// logUpstream writes one line for each upstream flag, config key and
// feature gate that was given, saying what shardwise does with it.
func (u *upstreamOptions) logUpstream(logger *slog.Logger) {
	for _, name := range u.noEffect {
		i := slices.IndexFunc(upstreamFlags, func(f upstreamFlag) bool { return f.name == name })
		logger.Info("upstream operator flag accepted; it has no effect in shardwise", "flag", "--"+name, "why", upstreamFlags[i].noEffect)
	}
	for _, key := range u.fileKeysIgnored {
		logger.Info("upstream operator config-file key accepted; it has no effect in shardwise", "key", key, "file", u.configFile)
	}
	for _, gate := range slices.Sorted(maps.Keys(u.featureGates)) {
		what, known := upstreamGates[gate]
		if !known {
			logger.Warn("unknown feature gate ignored (not one of the upstream operator v0.158's)", "gate", gate, "enabled", u.featureGates[gate])
			continue
		}
		logger.Info("upstream feature gate", "gate", gate, "enabled", u.featureGates[gate], "shardwise", what)
	}
}

// tlsOptions are the webhook and metrics servers' TLS settings from
// --tls-min-version and --tls-cipher-suites.
func (u *upstreamOptions) tlsOptions() ([]func(*tls.Config), error) {
	var minVersion uint16
	switch u.tlsMinVersion {
	case "VersionTLS12", "":
		minVersion = tls.VersionTLS12
	case "VersionTLS13":
		minVersion = tls.VersionTLS13
	case "VersionTLS10", "VersionTLS11":
		return nil, fmt.Errorf("--tls-min-version=%s: TLS before 1.2 is not served", u.tlsMinVersion)
	default:
		return nil, fmt.Errorf("--tls-min-version=%q: want VersionTLS12 or VersionTLS13", u.tlsMinVersion)
	}
	var ciphers []uint16
	for _, name := range u.tlsCiphers {
		id, ok := cipherSuite(name)
		if !ok {
			return nil, fmt.Errorf("--tls-cipher-suites: %q is not a secure cipher suite of crypto/tls", name)
		}
		ciphers = append(ciphers, id)
	}
	return []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion = minVersion
		if len(ciphers) > 0 {
			c.CipherSuites = ciphers
		}
	}}, nil
}

// cipherSuite finds a secure cipher suite by its crypto/tls name.
func cipherSuite(name string) (uint16, bool) {
	for _, s := range tls.CipherSuites() {
		if s.Name == name {
			return s.ID, true
		}
	}
	return 0, false
}

// metricsServer is the manager's metrics server: plain HTTP, or with
// --metrics-secure HTTPS that serves only clients the API server
// authenticates (TokenReview) and authorizes for GET /metrics
// (SubjectAccessReview), as controller-runtime's secure metrics do.
func (u *upstreamOptions) metricsServer(addr string, tlsOpts []func(*tls.Config)) (metricsserver.Options, error) {
	opts := metricsserver.Options{BindAddress: addr}
	if !u.metricsSecure {
		if u.metricsCert != "" || u.metricsKey != "" {
			return opts, errors.New("--metrics-tls-cert-file and --metrics-tls-key-file need --metrics-secure")
		}
		return opts, nil
	}
	opts.SecureServing = true
	opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	opts.TLSOpts = tlsOpts
	switch {
	case u.metricsCert == "" && u.metricsKey == "":
		// controller-runtime generates a self-signed certificate.
	case u.metricsCert == "" || u.metricsKey == "":
		return opts, errors.New("--metrics-tls-cert-file and --metrics-tls-key-file go together")
	case filepath.Dir(u.metricsCert) != filepath.Dir(u.metricsKey):
		return opts, errors.New("--metrics-tls-cert-file and --metrics-tls-key-file must be in one directory")
	default:
		opts.CertDir = filepath.Dir(u.metricsCert)
		opts.CertName = filepath.Base(u.metricsCert)
		opts.KeyName = filepath.Base(u.metricsKey)
	}
	return opts, nil
}
