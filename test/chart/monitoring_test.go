package chart

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestMonitoring: the chart's Grafana dashboards decode strictly with
// Grafana's own dashboard schema (grafana-foundation-sdk, which refuses
// unknown and mistyped fields) and pass its validation, and its alerts are
// rule groups Prometheus' own rule loader accepts (every expression parsed,
// every template checked). Rendered, they land in a ConfigMap with the
// sidecar's label and in a PrometheusRule; both are off by default.
func TestMonitoring(t *testing.T) {
	t.Parallel()
	plugins.RegisterDefaultPlugins()
	dir := filepath.Join(chartDir(), "files", "monitoring")
	for _, name := range []string{"dashboard-allocator.json", "dashboard-operator.json"} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		// The classic dashboard JSON model, which Grafana's dashboard sidecar
		// and import load; the SDK's newer v2 is the resource of Grafana's
		// own API, not this file format.
		var d dashboard.Dashboard //nolint:staticcheck // the JSON model the sidecar loads, see above

		require.NoError(t, buildErrors(d.UnmarshalJSONStrict(raw)), name)
		require.NoError(t, buildErrors(d.Validate()), name)
		require.NotEmpty(t, d.Panels, name)
	}
	rules, err := os.ReadFile(filepath.Join(dir, "rules.yaml"))
	require.NoError(t, err)
	groups, errs := rulefmt.Parse(rules, false)
	require.Empty(t, errs)
	require.Len(t, groups.Groups, 2)

	r := mustRender(t, "obs", "monitoring", nil)
	require.NotContains(t, r.names(), "ConfigMap/obs-shardwise-dashboards")
	require.NotContains(t, r.names(), "PrometheusRule/obs-shardwise")

	r = mustRender(t, "obs", "monitoring", values(t, `
grafanaDashboards: {enabled: true, namespace: grafana}
prometheusRule: {enabled: true, labels: {prometheus: main}}
`))
	cm := r.find(t, "ConfigMap", "obs-shardwise-dashboards")
	require.Equal(t, "grafana", cm.GetNamespace())
	require.Equal(t, "1", cm.GetLabels()["grafana_dashboard"])
	data := cm.Object["data"].(map[string]any)
	for file, key := range map[string]string{"dashboard-allocator.json": "shardwise-allocator.json", "dashboard-operator.json": "shardwise-operator.json"} {
		raw, err := os.ReadFile(filepath.Join(dir, file))
		require.NoError(t, err)
		require.JSONEq(t, string(raw), data[key].(string), "the ConfigMap holds %s unchanged", file)
	}
	pr := r.find(t, "PrometheusRule", "obs-shardwise")
	require.Equal(t, "main", pr.GetLabels()["prometheus"])
	var want map[string]any
	require.NoError(t, yaml.Unmarshal(rules, &want))
	require.Equal(t, want["groups"], pr.Object["spec"].(map[string]any)["groups"], "the PrometheusRule holds rules.yaml's groups")
}

// buildErrors is err, or nil for the SDK's empty error list (its strict
// decoder and validator return a cog.BuildErrors that holds nothing when
// all is well).
func buildErrors(err error) error {
	var be cog.BuildErrors
	if errors.As(err, &be) && len(be) == 0 {
		return nil
	}
	return err
}
