package webhook

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/testenv"
)

// TestInstrumentationCRDAcceptsUpstreamManifests applies upstream's e2e
// Instrumentation manifests unchanged and reads them back typed.
func TestInstrumentationCRDAcceptsUpstreamManifests(t *testing.T) {
	cfg := testenv.Require(t, env)
	c := testenv.Client(t, cfg, testScheme(t))
	testenv.Namespace(t, c, "crd-upstream", nil)
	files, err := filepath.Glob(filepath.Join("testdata", "upstream", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			u := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal(raw, &u.Object))
			u.SetNamespace("crd-upstream")
			u.SetName(u.GetName() + "-" + filepath.Base(f)[len("instrumentation-"):len(filepath.Base(f))-len(".yaml")])
			require.NoError(t, c.Create(t.Context(), u))
			got := &v1alpha1.Instrumentation{}
			require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(u), got))
			// The schema defaults apacheHttpd and nginx as upstream's webhook did.
			require.Equal(t, "2.4", got.Spec.ApacheHttpd.Version)
			require.Equal(t, "/usr/local/apache2/conf", got.Spec.ApacheHttpd.ConfigPath)
			require.Equal(t, "/etc/nginx/nginx.conf", got.Spec.Nginx.ConfigFile)
		})
	}
}

// TestInstrumentationCRDRefusesBadSpecs: what upstream's validating webhook
// refused, the schema refuses, with a message naming the field.
func TestInstrumentationCRDRefusesBadSpecs(t *testing.T) {
	cfg := testenv.Require(t, env)
	c := testenv.Client(t, cfg, testScheme(t))
	testenv.Namespace(t, c, "crd-bad", nil)
	for _, tc := range []struct {
		name    string
		spec    string
		wantErr string
	}{
		{"ratio above one", `{sampler: {type: traceidratio, argument: "1.5"}}`, "spec.sampler.argument must be a number in [0,1]"},
		{"ratio not a number", `{sampler: {type: parentbased_traceidratio, argument: "half"}}`, "spec.sampler.argument must be a number in [0,1]"},
		{"negative ratio", `{sampler: {type: traceidratio, argument: "-0.1"}}`, "spec.sampler.argument must be a number in [0,1]"},
		{"jaeger remote polling not an int", `{sampler: {type: jaeger_remote, argument: "endpoint=http://j:14250,pollingIntervalMs=soon"}}`, "pollingIntervalMs an integer"},
		{"jaeger remote empty endpoint", `{sampler: {type: jaeger_remote, argument: "endpoint="}}`, "endpoint non-empty"},
		{"jaeger remote rate", `{sampler: {type: jaeger_remote, argument: "initialSamplingRate=2"}}`, "initialSamplingRate in [0,1]"},
		{"unknown sampler", `{sampler: {type: sometimes}}`, `Unsupported value: "sometimes"`},
		{"unknown propagator", `{propagators: [w3c]}`, `Unsupported value: "w3c"`},
		{"java volume both ways", `{java: {volumeLimitSize: 100Mi, volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce]}}}}`, "spec.java.volumeClaimTemplate and spec.java.volumeLimitSize cannot both be defined"},
		{"python volume both ways", `{python: {volumeLimitSize: 100Mi, volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce]}}}}`, "spec.python.volumeClaimTemplate and spec.python.volumeLimitSize cannot both be defined"},
		{"nginx config file", `{nginx: {configFile: "/etc/nginx/nginx.conf; rm -rf /"}}`, "spec.nginx.configFile"},
		{"ok ratio", `{sampler: {type: traceidratio, argument: "0.25"}}`, ""},
		{"ok ratio one", `{sampler: {type: parentbased_traceidratio, argument: "1.0"}}`, ""},
		{"ok jaeger remote", `{sampler: {type: jaeger_remote, argument: "endpoint=http://j:14250,pollingIntervalMs=5000,initialSamplingRate=0.25"}}`, ""},
		{"ok other sampler argument", `{sampler: {type: always_on, argument: "ignored"}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := map[string]any{}
			require.NoError(t, yaml.Unmarshal([]byte(tc.spec), &spec))
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "opentelemetry.io/v1alpha1", "kind": "Instrumentation",
				"metadata": map[string]any{"generateName": "bad-", "namespace": "crd-bad"},
				"spec":     spec,
			}}
			err := c.Create(t.Context(), u)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestInstrumentationShortNamesAndStatus(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "crd", "bases", "opentelemetry.io_instrumentations.yaml"))
	require.NoError(t, err)
	var crd struct {
		Spec struct {
			Names struct {
				ShortNames []string `json:"shortNames"`
			} `json:"names"`
			Versions []struct {
				Subresources map[string]any `json:"subresources"`
			} `json:"versions"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &crd))
	require.Equal(t, []string{"otelinst", "otelinsts"}, crd.Spec.Names.ShortNames)
	require.Contains(t, crd.Spec.Versions[0].Subresources, "status")
}
