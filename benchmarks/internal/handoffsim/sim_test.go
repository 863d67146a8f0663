package handoffsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHandoffCloses: with the handoff (and a collector that keeps running
// 60 s after it is told to stop, a preStop sleep) no target goes unscraped
// through a join, a scale-down or a rolling restart; without it (a collector
// that exits 2 s after it is told to) each leaves targets unscraped for
// seconds.
func TestHandoffCloses(t *testing.T) {
	t.Parallel()
	for _, sc := range []string{"join", "scale-down", "rolling-restart"} {
		for _, on := range []bool{true, false} {
			terminating := 2 * time.Second
			if on {
				terminating = 60 * time.Second
			}
			f, err := Run(sc, Config{
				Targets: 600, Collectors: 3, Poll: 30 * time.Second, Latency: 10 * time.Second,
				Handoff: on, Settle: 10 * time.Second, Terminating: terminating, Grace: 30 * time.Second, Seed: 1,
			})
			require.NoError(t, err)
			t.Logf("%+v", f)
			if on || sc != "rolling-restart" {
				require.Positive(t, f.Moved, "%s moves targets", sc)
			} // without the handoff a pod back within the grace period moves nothing
			if on {
				require.Zero(t, f.LongestGapS, "%s with the handoff", sc)
				require.Positive(t, f.OverlapS)
			} else {
				require.Positive(t, f.LongestGapS, "%s without the handoff", sc)
			}
		}
	}
}
