package webhook

import (
	"testing"

	"github.com/shardwise/shardwise/internal/metricset/metricsettest"
)

// TestMetricsLint: the pod webhook's metrics pass promlint.
func TestMetricsLint(t *testing.T) {
	t.Parallel()
	metricsettest.Require(t, 4, metricsettest.Of(NewMetrics), metricsettest.Of(NewSidecarMetrics))
}
