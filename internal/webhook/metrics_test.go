package webhook

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/internal/metricset/metricsettest"
)

// TestMetricsLint: the pod webhook's metrics pass promlint.
func TestMetricsLint(t *testing.T) {
	t.Parallel()
	reg := metricsettest.NewRegistry()
	_, err := NewMetrics(reg)
	require.NoError(t, err)
	_, err = NewSidecarMetrics(reg)
	require.NoError(t, err)
	require.Len(t, reg.Declared(), 4)
	require.NoError(t, reg.Lint())
}
