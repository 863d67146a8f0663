package apis_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestShortNames pins the short names of every CRD we generate. A short name
// another well-known project already registers makes `kubectl get <short>`
// ambiguous in a cluster that runs both (issue 15): `ta` and `cta` are
// KEDA's TriggerAuthentication and ClusterTriggerAuthentication, so the
// TargetAllocator has none, as upstream's.
func TestShortNames(t *testing.T) {
	taken := map[string]string{
		"ta":   "KEDA TriggerAuthentication",
		"cta":  "KEDA ClusterTriggerAuthentication",
		"so":   "KEDA ScaledObject",
		"sj":   "KEDA ScaledJob",
		"smon": "prometheus-operator ServiceMonitor",
		"pmon": "prometheus-operator PodMonitor",
	}
	tests := map[string][]string{
		"opentelemetry.io_opentelemetrycollectors.yaml": {"otelcol", "otelcols"},
		"opentelemetry.io_instrumentations.yaml":        {"otelinst", "otelinsts"},
		"opentelemetry.io_targetallocators.yaml":        nil,
		"opentelemetry.io_opampbridges.yaml":            nil,
	}
	files, err := filepath.Glob(filepath.Join("..", "config", "crd", "bases", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, len(tests), "a CRD without a row here, or a row without a CRD")
	for file, want := range tests {
		t.Run(file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "config", "crd", "bases", file))
			require.NoError(t, err)
			var crd struct {
				Spec struct {
					Names struct {
						ShortNames []string `json:"shortNames"`
					} `json:"names"`
				} `json:"spec"`
			}
			require.NoError(t, yaml.Unmarshal(raw, &crd))
			require.Equal(t, want, crd.Spec.Names.ShortNames)
			for _, s := range crd.Spec.Names.ShortNames {
				require.NotContains(t, taken, s, "short name %q is %s's", s, taken[s])
			}
		})
	}
}
