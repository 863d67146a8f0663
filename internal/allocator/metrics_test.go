package allocator

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/internal/metricset/metricsettest"
)

// TestMetricsLint: the allocator's metrics pass promlint, label vectors
// included, and a second set on the same registry fails whole.
func TestMetricsLint(t *testing.T) {
	t.Parallel()
	reg := metricsettest.NewRegistry()
	_, err := newMetrics(reg)
	require.NoError(t, err)
	require.Len(t, reg.Declared(), 10)
	require.NoError(t, reg.Lint())
	_, err = newMetrics(reg)
	require.Error(t, err, "the names are taken")
}
