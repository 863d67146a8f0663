package discovery

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/discovery/collector"
	"github.com/shardwise/shardwise/discovery/operator"
	"github.com/shardwise/shardwise/internal/metricset/metricsettest"
)

// TestMetricsLint: the discovery metrics (the Manager's, the operator
// watcher's and the collector watcher's, on one registry as the allocator
// has them) pass promlint, and the shared ones are registered once.
func TestMetricsLint(t *testing.T) {
	t.Parallel()
	reg := metricsettest.NewRegistry()
	_, err := NewMetrics(reg)
	require.NoError(t, err)
	_, err = operator.NewMetrics(reg)
	require.NoError(t, err)
	_, err = collector.NewMetrics(reg)
	require.NoError(t, err)
	require.NoError(t, reg.Lint())
	require.Len(t, reg.Declared(), 13, "5 + 5 + 3 declarations, two of them shared")
}
