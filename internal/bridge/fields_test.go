package bridge

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1beta1"
)

// currentCollector is a collector as its owner wrote it: a pipeline with a
// credential, an image, an environment value, a host path.
const currentCollector = `
mode: statefulset
image: registry.example/otelcol:1
replicas: 2
env: [{name: API_KEY, value: s3cr3t}, {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
volumes: [{name: host, hostPath: {path: /var/log}}]
config:
  receivers: {otlp: {protocols: {grpc: {}}}}
  exporters:
    otlphttp: {endpoint: https://backend.example, headers: {x-api-key: abc123}, tls: {key_file: /tls/key}}
  service: {pipelines: {traces: {receivers: [otlp], exporters: [otlphttp]}}}
`

func decodeSpec(t *testing.T, doc string) (v1beta1.OpenTelemetryCollectorSpec, map[string]json.RawMessage) {
	t.Helper()
	var spec v1beta1.OpenTelemetryCollectorSpec
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &spec))
	var raw map[string]json.RawMessage
	require.NoError(t, yaml.Unmarshal([]byte(doc), &raw))
	return spec, raw
}

// TestReportedAndRemoteSpec: the bridge reports the fields the server may
// set, with credentials and environment values redacted; the report sent
// back unchanged changes nothing, redacted values included; a new exporter
// is taken; a field the server may not set is refused unless it is as the
// collector has it; fields the server does not write stay as they are.
func TestReportedAndRemoteSpec(t *testing.T) {
	t.Parallel()
	current, _ := decodeSpec(t, currentCollector)
	allowed := DefaultRemoteConfigFields

	reported, err := reportedSpec(&current, allowed)
	require.NoError(t, err)
	body, err := yaml.Marshal(reported)
	require.NoError(t, err)
	require.NotContains(t, string(body), "abc123", "a header value")
	require.NotContains(t, string(body), "/tls/key", "a key file")
	require.NotContains(t, string(body), "s3cr3t", "env is not reported by default")
	require.NotContains(t, string(body), "registry.example", "the image is not the server's")
	require.Contains(t, string(body), Redacted)
	require.Contains(t, string(body), "https://backend.example", "the rest of the pipeline is")

	// The report, sent back as the server's remote configuration.
	_, raw := decodeSpec(t, string(body))
	got, err := remoteSpec(&current, raw, allowed)
	require.NoError(t, err)
	require.Equal(t, current, got, "a round trip of the report changes nothing")

	// A new exporter endpoint: taken, the redacted header kept.
	require.Contains(t, string(body), "https://backend.example")
	_, raw = decodeSpec(t, strings.Replace(string(body), "https://backend.example", "https://other.example", 1))
	got, err = remoteSpec(&current, raw, allowed)
	require.NoError(t, err)
	exp := got.Config.Exporters.Object["otlphttp"].(map[string]any)
	require.Equal(t, "https://other.example", exp["endpoint"])
	require.Equal(t, "abc123", exp["headers"].(map[string]any)["x-api-key"])
	require.Equal(t, "registry.example/otelcol:1", got.Image, "not written by the server: kept")
	require.Len(t, got.Volumes, 1)

	// Fields the server may not set.
	_, raw = decodeSpec(t, "image: registry.example/evil:1\nhostNetwork: true\nconfig: {}\n")
	_, err = remoteSpec(&current, raw, allowed)
	require.ErrorContains(t, err, "may not set spec.hostNetwork, spec.image")
	// ... unless as the collector has them.
	_, raw = decodeSpec(t, "image: registry.example/otelcol:1\nmode: statefulset\n"+string(body))
	_, err = remoteSpec(&current, raw, allowed)
	require.NoError(t, err)
	// A new collector gets only what the server may set.
	_, raw = decodeSpec(t, "serviceAccount: cluster-admin\n"+string(body))
	_, err = remoteSpec(nil, raw, allowed)
	require.ErrorContains(t, err, "may not set spec.serviceAccount")

	// With env allowed, literal values are redacted and come back.
	withEnv := append([]string{"env"}, allowed...)
	reported, err = reportedSpec(&current, withEnv)
	require.NoError(t, err)
	body, err = yaml.Marshal(reported)
	require.NoError(t, err)
	require.NotContains(t, string(body), "s3cr3t")
	require.Contains(t, string(body), "metadata.name", "a reference names no secret")
	_, raw = decodeSpec(t, string(body))
	got, err = remoteSpec(&current, raw, withEnv)
	require.NoError(t, err)
	require.Equal(t, []corev1.EnvVar{{Name: "API_KEY", Value: "s3cr3t"}, {Name: "POD", ValueFrom: current.Env[1].ValueFrom}}, got.Env)
	require.Equal(t, ptr.To(int32(2)), got.Replicas)
}

func TestRemoteConfigFieldsChecked(t *testing.T) {
	t.Parallel()
	_, err := ParseConfig([]byte("endpoint: wss://x/y\ncapabilities: {}\nremoteConfigFields: [config, imagee]\n"))
	require.ErrorContains(t, err, "imagee: not fields of an OpenTelemetryCollector's spec")
	c, err := ParseConfig([]byte("endpoint: wss://x/y\ncapabilities: {}\n"))
	require.NoError(t, err)
	require.Equal(t, DefaultRemoteConfigFields, c.remoteFields())
}
