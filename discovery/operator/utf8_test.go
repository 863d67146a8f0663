package operator

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

// TestUTF8NamesWithOperatorLinked: with prometheus-operator linked in (its
// init switches Prometheus' label-name validation to legacy), a config with
// UTF-8 label names still loads.
func TestUTF8NamesWithOperatorLinked(t *testing.T) {
	t.Parallel()
	cfg, err := allocatorconfig.LoadPromConfig([]byte(`
scrape_configs:
- job_name: utf8
  static_configs: [{targets: ["a:1"], labels: {"service.name": "x"}}]
  relabel_configs:
  - {target_label: "k8s.namespace", replacement: "ns"}
`))
	require.NoError(t, err)
	require.Equal(t, "utf8", cfg.ScrapeConfigs[0].JobName)
}
