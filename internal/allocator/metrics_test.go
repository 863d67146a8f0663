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
	reg := metricsettest.Require(t, 10, metricsettest.Of(newMetrics))
	_, err := newMetrics(reg)
	require.Error(t, err, "the names are taken")
}
