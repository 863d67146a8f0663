package discovery

import (
	"testing"

	"github.com/shardwise/shardwise/discovery/collector"
	"github.com/shardwise/shardwise/discovery/operator"
	"github.com/shardwise/shardwise/internal/metricset/metricsettest"
)

// TestMetricsLint: the discovery metrics (the Manager's, the operator
// watcher's and the collector watcher's, on one registry as the allocator
// has them) pass promlint; 5 + 5 + 3 declarations, two of them of the
// shared metrics, registered once.
func TestMetricsLint(t *testing.T) {
	t.Parallel()
	metricsettest.Require(t, 13, metricsettest.Of(NewMetrics), metricsettest.Of(operator.NewMetrics), metricsettest.Of(collector.NewMetrics))
}
