package bridge

import (
	"fmt"
	"strings"
	"testing"

	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests/opampbridge"
)

// TestParseOperatorConfig: the file the operator renders for upstream's
// sample loads, with the capabilities as OpAMP flags.
func TestParseOperatorConfig(t *testing.T) {
	t.Parallel()
	raw := `
capabilities:
  AcceptsRemoteConfig: true
  ReportsEffectiveConfig: true
  ReportsHealth: true
  ReportsStatus: true
  ReportsOwnMetrics: false
componentsAllowed:
  exporters: [debug]
  receivers: [otlp]
description:
  non_identifying_attributes:
    cluster: east
endpoint: wss://opamp-server:4320/v1/opamp
headers:
  Authorization: Bearer x
`
	c, err := ParseConfig([]byte(raw))
	require.NoError(t, err)
	want := protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsEffectiveConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus
	require.Equal(t, want, c.AgentCapabilities())
	require.Equal(t, "Bearer x", c.HTTPHeader().Get("Authorization"))
}

func TestParseConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, raw, msg string }{
		{"no endpoint", "capabilities: {ReportsHealth: true}\n", "not a URL"},
		{"bad scheme", "endpoint: ftp://x/y\ncapabilities: {}\n", "scheme must be"},
		{"insecure wss", "endpoint: wss://x/y\ntls: {insecure: true}\ncapabilities: {}\n", "tls.insecure needs"},
		{"plain text without consent", "endpoint: ws://x/y\ncapabilities: {}\n", "set tls.insecure: true"},
		{"http without consent", "endpoint: http://x/y\ntls: {insecure_skip_verify: true}\ncapabilities: {}\n", "plain text"},
		{"unknown capability", "endpoint: wss://x/y\ncapabilities: {Flies: true}\n", "unknown capability"},
		{"unknown key", "endpoint: wss://x/y\nstandalone: {}\n", "unknown field"},
		{"not yaml", "endpoint: [", "parse config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig([]byte(tc.raw))
			require.ErrorContains(t, err, tc.msg)
		})
	}
}

// TestRenderedConfigLoads: what the operator's builder renders, the bridge loads.
func TestRenderedConfigLoads(t *testing.T) {
	t.Parallel()
	doc := `
metadata: {name: s, namespace: ns}
spec:
  endpoint: wss://opamp.example.com/v1/opamp
  tls: {insecure_skip_verify: true}
  proxy: {url: "http://proxy:3128", headers: {X: y}}
  capabilities: {AcceptsRemoteConfig: true, ReportsHealth: true}
  componentsAllowed: {receivers: [otlp]}
  remoteConfigFields: [config, mode]
  description: {non_identifying_attributes: {a: b}}
`
	br := decodeBridge(t, doc)
	rendered, err := opampbridge.RenderConfig(br)
	require.NoError(t, err)
	c, err := ParseConfig([]byte(rendered))
	require.NoError(t, err)
	require.True(t, c.TLS.InsecureSkipVerify)
	require.Equal(t, []string{"config", "mode"}, c.remoteFields())
	require.Equal(t, "http://proxy:3128", c.Proxy.URL)
	require.True(t, c.Has(protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus))
}

func TestCheckComponents(t *testing.T) {
	t.Parallel()
	allowed := map[string][]string{"receivers": {"otlp"}, "processors": {"batch"}, "exporters": {"debug", "otlp/2"}}
	for _, tc := range []struct {
		name, cfg string
		allowed   map[string][]string
		err       string
	}{
		{"allowed", "receivers: {otlp: {}, otlp/b: {}}\nprocessors: {batch: {}}\nexporters: {debug: {}, otlp/2: {}}\nservice: {}", allowed, ""},
		{"refused receiver", "receivers: {zipkin: {}}\nexporters: {debug: {}}\nservice: {}", allowed, "receivers.zipkin"},
		{"refused exact id", "receivers: {otlp: {}}\nexporters: {otlp/3: {}}\nservice: {}", allowed, "exporters.otlp/3"},
		{"kind not listed", "receivers: {otlp: {}}\nexporters: {debug: {}}\nprocessors: {batch: {}}\nservice: {}", map[string][]string{"receivers": {"otlp"}, "exporters": {"debug"}}, "processors.batch"},
		{"extensions ungoverned", "receivers: {otlp: {}}\nexporters: {debug: {}}\nextensions: {health_check: {}}\nservice: {}", allowed, ""},
		{"extensions governed", "receivers: {otlp: {}}\nexporters: {debug: {}}\nextensions: {pprof: {}}\nservice: {}", map[string][]string{"receivers": {"otlp"}, "exporters": {"debug"}, "extensions": {"health_check"}}, "extensions.pprof"},
		{"empty allows all", "receivers: {zipkin: {}}\nexporters: {kafka: {}}\nservice: {}", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var cfg v1beta1.Config
			require.NoError(t, yaml.Unmarshal([]byte(tc.cfg), &cfg))
			err := checkComponents(&cfg, tc.allowed)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestParseEntry(t *testing.T) {
	t.Parallel()
	body := "apiVersion: opentelemetry.io/v1beta1\nkind: OpenTelemetryCollector\nspec:\n  config:\n    receivers: {otlp: {}}\n    exporters: {debug: {}}\n    service: {}\n"
	for _, tc := range []struct{ name, key, body, err string }{
		{"ok", "obs/c1", body, ""},
		{"no slash", "c1", body, "key must be"},
		{"two slashes", "a/b/c", body, "key must be"},
		{"bad namespace", "Obs/c1", body, "namespace"},
		{"empty body", "obs/c1", " \n", "empty body"},
		{"not yaml", "obs/c1", "spec: [", "not an OpenTelemetryCollector"},
		{"unknown field", "obs/c1", "spec:\n  flavour: x\n", "not an OpenTelemetryCollector"},
		{"wrong kind", "obs/c1", "kind: Pod\n", "kind"},
		{"name mismatch", "obs/c1", "metadata: {name: c2}\n", "not the key"},
		{"sets reporting", "obs/c1", "metadata: {labels: {opentelemetry.io/opamp-reporting: 'true'}}\n", "cannot set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseEntry(tc.key, &protobufs.AgentConfigFile{Body: []byte(tc.body)})
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
	_, err := parseEntry("obs/c1", nil)
	require.ErrorContains(t, err, "empty body")
	_, err = parseEntry("obs/c1", &protobufs.AgentConfigFile{Body: []byte(body + "# " + strings.Repeat("x", MaxEntryBytes))})
	require.ErrorContains(t, err, "more than the 1572864 an object may have")
}

// TestRemoteConfigBounds: a configuration with too many entries is refused
// before any entry is parsed or anything read.
func TestRemoteConfigBounds(t *testing.T) {
	t.Parallel()
	files := map[string]*protobufs.AgentConfigFile{}
	for i := range MaxRemoteEntries + 1 {
		files[fmt.Sprintf("obs/c%d", i)] = &protobufs.AgentConfigFile{Body: []byte("spec: {}")}
	}
	st := (&Bridge{}).applyRemoteConfig(t.Context(), &protobufs.AgentRemoteConfig{Config: &protobufs.AgentConfigMap{ConfigMap: files}})
	require.Equal(t, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED, st.GetStatus())
	require.Equal(t, "remote config has 1001 entries, more than the 1000 a bridge takes", st.GetErrorMessage())
}

// TestMayWriteNamespace: a bridge watching every namespace writes to the
// listed namespaces, or to every namespace but the system ones.
func TestMayWriteNamespace(t *testing.T) {
	t.Parallel()
	var open Config
	require.True(t, open.mayWriteNamespace("team-a"))
	for _, ns := range SystemNamespaces {
		require.False(t, open.mayWriteNamespace(ns), ns)
	}
	listed := Config{v1alpha1.OpAMPBridgeConnection{RemoteConfigNamespaces: []string{"team-a", "kube-system"}}}
	require.True(t, listed.mayWriteNamespace("team-a"))
	require.True(t, listed.mayWriteNamespace("kube-system"), "listed explicitly")
	require.False(t, listed.mayWriteNamespace("team-b"))

	_, err := ParseConfig([]byte("endpoint: wss://s/v1/opamp\ncapabilities: {}\nremoteConfigNamespaces: [Team_A]\n"))
	require.ErrorContains(t, err, `remoteConfigNamespaces: "Team_A"`)
}

// FuzzParseEntry: no key or body crashes the parser.
func FuzzParseEntry(f *testing.F) {
	f.Add("obs/c1", []byte("spec:\n  config:\n    receivers: {otlp: {}}\n"))
	f.Add("a/b", []byte("{"))
	f.Add("", []byte("\x00\xff"))
	f.Fuzz(func(_ *testing.T, key string, body []byte) {
		_, _ = parseEntry(key, &protobufs.AgentConfigFile{Body: body})
	})
}

func decodeBridge(t *testing.T, doc string) *v1alpha1.OpAMPBridge {
	t.Helper()
	var b v1alpha1.OpAMPBridge
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &b))
	return &b
}

// TestRemoteConfigWithoutConfigMap: a remote config without a config map is
// refused with a reason before anything is read or written.
func TestRemoteConfigWithoutConfigMap(t *testing.T) {
	t.Parallel()
	b := &Bridge{}
	st := b.applyRemoteConfig(t.Context(), &protobufs.AgentRemoteConfig{ConfigHash: []byte("h")})
	require.Equal(t, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED, st.GetStatus())
	require.Equal(t, "remote config has no config map", st.GetErrorMessage())
	require.Equal(t, []byte("h"), st.GetLastRemoteConfigHash())
}

// TestRemoteConfigIgnoredWithoutCapability: without AcceptsRemoteConfig a
// pushed configuration is never queued for applying.
func TestRemoteConfigIgnoredWithoutCapability(t *testing.T) {
	t.Parallel()
	for _, accepts := range []bool{false, true} {
		b := &Bridge{
			cfg:    Config{v1alpha1.OpAMPBridgeConnection{Capabilities: map[v1alpha1.OpAMPBridgeCapability]bool{"AcceptsRemoteConfig": accepts, "ReportsEffectiveConfig": true}}},
			remote: make(chan struct{}, 1),
		}
		b.onMessage(t.Context(), &types.MessageData{RemoteConfig: &protobufs.AgentRemoteConfig{}})
		require.Equal(t, accepts, b.pending != nil)
		require.Len(t, b.remote, map[bool]int{false: 0, true: 1}[accepts])
	}
}
