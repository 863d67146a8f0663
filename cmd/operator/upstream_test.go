package main

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func noEnv(string) (string, bool) { return "", false }

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// upstreamChartArgs are the args upstream's Helm chart (opentelemetry-operator
// 0.122.0) passes the manager by default, and the ones its values add.
var upstreamChartArgs = []string{
	"--metrics-addr=0.0.0.0:8080",
	"--enable-leader-election",
	"--health-probe-addr=:8081",
	"--webhook-port=9443",
	"--collector-image=ghcr.io/open-telemetry/opentelemetry-collector-releases/opentelemetry-collector-k8s:0.158.0",
	"--feature-gates=+operator.golang.flags,-operand.networkpolicy",
	"--zap-log-level=info",
	"--zap-time-encoding=rfc3339nano",
	"--enable-nginx-instrumentation=true",
	"--create-rbac-permissions",
	"--labels-filter=.*filter.out", "--labels-filter=team",
	"--annotations-filter=kubectl.kubernetes.io/*",
	"--enable-cr-metrics=true",
	"--ignore-missing-collector-crds",
	"--pprof-addr=:6060",
	"--tls-min-version=VersionTLS13",
	"--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"--operator-opamp-bridge-image=bridge:1",
	"--watch-namespace=team-a, team-b",
}

func TestUpstreamFlags(t *testing.T) {
	t.Parallel()
	o, err := parseFlags(upstreamChartArgs, noEnv)
	require.NoError(t, err)
	require.Equal(t, "0.0.0.0:8080", o.metricsAddr, "--metrics-addr is --metrics-bind-address")
	require.Equal(t, ":8081", o.probeAddr)
	require.True(t, o.leaderElect, "--enable-leader-election is --leader-elect")
	require.Equal(t, "bridge:1", o.opampBridgeImage)
	require.Equal(t, []string{"team-a", "team-b"}, o.watchNamespaces, "--watch-namespace takes a list, as upstream")
	require.Equal(t, ":6060", o.upstream.pprofAddr)
	require.Equal(t, map[string]bool{"operator.golang.flags": true, "operand.networkpolicy": false}, o.upstream.featureGates)
	require.Equal(t, []string{"ignore-missing-collector-crds"}, o.upstream.noEffect)
	require.True(t, o.componentRBAC, "--create-rbac-permissions")
	require.True(t, o.crMetrics, "--enable-cr-metrics=true")
	require.Len(t, o.labelsFilter, 2)
	require.True(t, o.labelsFilter[0].MatchString("team.example.com/filter.out"))
	require.Len(t, o.annotationsFilter, 1)
	require.True(t, o.annotationsFilter[0].MatchString("kubectl.kubernetes.io/restartedAt"))

	tlsOpts, err := o.upstream.tlsOptions()
	require.NoError(t, err)
	var c tls.Config
	for _, f := range tlsOpts {
		f(&c)
	}
	require.Equal(t, uint16(tls.VersionTLS13), c.MinVersion)
	require.Equal(t, []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}, c.CipherSuites)

	var logs bytes.Buffer
	o.upstream.logUpstream(slog.New(slog.NewTextHandler(&logs, nil)))
	out := logs.String()
	for _, name := range o.upstream.noEffect {
		require.Equal(t, 1, strings.Count(out, "flag=--"+name+" "), "one line for --%s, given %s", name, "once or more")
	}
	require.Contains(t, out, "gate=operand.networkpolicy enabled=false")
}

// TestEveryUpstreamFlag parses each flag the upstream operator v0.158
// defines, in each form pflag accepts that Go's flag package does too.
func TestEveryUpstreamFlag(t *testing.T) {
	t.Parallel()
	for _, name := range upstreamFlagNames {
		value := "x"
		switch {
		case strings.HasPrefix(name, "enable-") || slices.Contains([]string{"metrics-secure", "create-rbac-permissions", "openshift-create-dashboard", "create-sm-operator-metrics", "ignore-missing-collector-crds", "tls-cluster-profile", "tls-configure-operands", "zap-devel"}, name):
			value = "true"
		case strings.HasSuffix(name, "-port") || name == "openshift-webhook-replicas":
			value = "9443"
		case name == "tls-min-version":
			value = "VersionTLS12"
		case name == "tls-cipher-suites":
			value = "TLS_AES_128_GCM_SHA256"
		case name == "zap-log-level":
			value = "debug"
		case name == "zap-encoder":
			value = "json"
		case name == "zap-stacktrace-level":
			value = "error"
		case name == "zap-time-encoding":
			value = "iso8601"
		case name == "feature-gates":
			value = "-operator.networkpolicy"
		case name == "config-file":
			value = writeFile(t, "config.yaml", "collector-image: c\n")
		case name == "metrics-tls-cert-file" || name == "metrics-tls-key-file":
			// These need --metrics-secure; TestMetricsServer covers them.
			continue
		}
		for _, args := range [][]string{{"--" + name + "=" + value}, {"-" + name + "=" + value}, {"--" + name, value}} {
			if value == "true" && len(args) == 2 {
				args = args[:1]
				args[0] = "--" + name
			}
			_, err := parseFlags(args, noEnv)
			require.NoError(t, err, "%v", args)
		}
	}
}

func TestUpstreamFlagErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--not-an-upstream-flag"},
		{"--feature-gates=gate=maybe"},
		{"--tls-min-version=VersionTLS10"},
		{"--tls-min-version=tls12"},
		{"--tls-cipher-suites=TLS_RSA_WITH_RC4_128_SHA"},
		{"--config-file=/does/not/exist.yaml"},
		{"--metrics-tls-cert-file=/a/tls.crt"},
		{"stray"},
	} {
		_, err := parseFlags(args, noEnv)
		require.Error(t, err, "%v", args)
	}
}

// TestUpstreamConfigFileAndEnv: the file sets what the command line does
// not, the environment wins over the file, the command line over both.
func TestUpstreamConfigFileAndEnv(t *testing.T) {
	t.Parallel()
	file := writeFile(t, "config.yaml", `
collector-image: from-file
targetallocator-image: ta-from-file
enable-go-auto-instrumentation: true
watch-namespace: a,b
labels-filter: [x, y]
prometheus-cr-availability: 1
`)
	o, err := parseFlags([]string{"--config-file=" + file, "--target-allocator-image=ta-from-cli"},
		envOf(map[string]string{"RELATED_IMAGE_COLLECTOR": "from-env", "WATCH_NAMESPACE": "env-ns", "RELATED_IMAGE_TARGET_ALLOCATOR": "ta-from-env"}))
	require.NoError(t, err)
	require.Equal(t, "from-env", o.collectorImage)
	require.Equal(t, "ta-from-cli", o.targetAllocatorImage)
	require.Equal(t, []string{"env-ns"}, o.watchNamespaces)
	require.True(t, *o.webhook.enabledLanguages["go"])
	require.Empty(t, o.upstream.noEffect)
	require.Len(t, o.labelsFilter, 2, "labels-filter: [x, y] in the config file")
	require.Equal(t, []string{"prometheus-cr-availability"}, o.upstream.fileKeysIgnored)

	_, err = parseFlags([]string{"--config-file=" + writeFile(t, "bad.yaml", "webhook-port: [1, 2]\n")}, noEnv)
	require.ErrorContains(t, err, "webhook-port")
	_, err = parseFlags(nil, envOf(map[string]string{"WEBHOOK_PORT": "nine"}))
	require.ErrorContains(t, err, "$WEBHOOK_PORT")
}

func TestMetricsServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o, err := parseFlags([]string{"--metrics-secure", "--metrics-tls-cert-file=" + filepath.Join(dir, "m.crt"), "--metrics-tls-key-file=" + filepath.Join(dir, "m.key")}, noEnv)
	require.NoError(t, err)
	m, err := o.upstream.metricsServer(":8443", nil)
	require.NoError(t, err)
	require.True(t, m.SecureServing)
	require.NotNil(t, m.FilterProvider, "secure metrics authenticate and authorize")
	require.Equal(t, dir, m.CertDir)
	require.Equal(t, "m.crt", m.CertName)
	require.Equal(t, "m.key", m.KeyName)

	o, err = parseFlags(nil, noEnv)
	require.NoError(t, err)
	m, err = o.upstream.metricsServer(":8080", nil)
	require.NoError(t, err)
	require.False(t, m.SecureServing)

	o.upstream.metricsSecure, o.upstream.metricsCert, o.upstream.metricsKey = true, "/a/m.crt", "/b/m.key"
	_, err = o.upstream.metricsServer(":8443", nil)
	require.ErrorContains(t, err, "one directory")
}

// upstreamFlagNames are every flag the upstream operator v0.158 defines:
// internal/config/cli.go, --config-file and --feature-gates
// (cmd/operator/operator.go) and controller-runtime's zap options.
var upstreamFlagNames = []string{
	"metrics-addr", "metrics-secure", "metrics-tls-cert-file", "metrics-tls-key-file", "health-probe-addr",
	"pprof-addr", "enable-leader-election", "create-rbac-permissions", "openshift-create-dashboard",
	"enable-multi-instrumentation", "enable-apache-httpd-instrumentation", "enable-dotnet-instrumentation",
	"enable-go-instrumentation", "enable-python-instrumentation", "enable-nginx-instrumentation",
	"enable-nodejs-instrumentation", "enable-java-instrumentation", "enable-cr-metrics", "create-sm-operator-metrics",
	"ignore-missing-collector-crds", "collector-image", "clusterobservability-collector-image", "target-allocator-image",
	"operator-opamp-bridge-image", "auto-instrumentation-java-image", "auto-instrumentation-nodejs-image",
	"auto-instrumentation-python-image", "auto-instrumentation-dotnet-image", "auto-instrumentation-go-image",
	"auto-instrumentation-apache-httpd-image", "auto-instrumentation-nginx-image", "labels-filter", "annotations-filter",
	"fips-disabled-components", "webhook-port", "tls-cluster-profile", "tls-configure-operands", "tls-min-version",
	"tls-cipher-suites", "zap-message-key", "zap-level-key", "zap-time-key", "zap-level-format", "enable-webhooks",
	"watch-namespace", "openshift-webhook-replicas", "config-file", "feature-gates",
	"zap-devel", "zap-encoder", "zap-log-level", "zap-stacktrace-level", "zap-time-encoding",
}

// TestOperatorFlagsDoc keeps docs/operator-flags.md's table in step: every
// upstream flag has a row, and each no-effect row gives the reason the
// operator logs.
func TestOperatorFlagsDoc(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operator-flags.md"))
	require.NoError(t, err)
	rows := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)` \\| (.*) \\|$").FindAllStringSubmatch(string(doc), -1) {
		rows[m[1]] = m[2]
	}
	for _, name := range upstreamFlagNames {
		require.Contains(t, rows, name, "docs/operator-flags.md has no row for --%s", name)
	}
	for _, f := range upstreamFlags {
		switch {
		case f.alias != "":
			require.Contains(t, rows[f.name], "`--"+f.alias+"`", "--%s", f.name)
		case f.noEffect != "":
			require.Contains(t, rows[f.name], f.noEffect, "--%s", f.name)
		}
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}
