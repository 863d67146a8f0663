package strategy

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/allocation"
)

func targets(n, jobs int) map[string][]*allocation.Target {
	out := map[string][]*allocation.Target{}
	for i := range n {
		job := "job-" + strconv.Itoa(i%jobs)
		addr := fmt.Sprintf("10.0.%d.%d:9100", i>>8, i&255)
		out[job] = append(out[job], &allocation.Target{Job: job, Hash: xxhash.Sum64String(job + "\xff" + addr), Address: addr,
			Labels: allocation.DiscoveredOf(labels.FromStrings("__address__", addr, "job", job))})
	}
	return out
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "collector-" + strconv.Itoa(i)
	}
	return out
}

// TestHashModMatchesPrometheus checks the baseline against Prometheus' own
// hashmod relabel action, as prometheus-operator configures it per shard.
func TestHashModMatchesPrometheus(t *testing.T) {
	t.Parallel()
	const shards = 7
	h := NewHashMod()
	h.SetCollectors(names(shards))
	jobs := targets(500, 5)
	h.SetJobTargets(jobs)
	cfg := &relabel.Config{
		SourceLabels: model.LabelNames{"__address__"},
		Separator:    ";",
		Regex:        relabel.MustNewRegexp("(.*)"),
		Replacement:  "$1",
		Modulus:      shards,
		TargetLabel:  "__tmp_hash",
		Action:       relabel.HashMod,
	}
	for _, ts := range jobs {
		for _, tg := range ts {
			lb := labels.NewBuilder(tg.Labels.Labels())
			require.True(t, relabel.ProcessBuilder(lb, cfg))
			out := lb.Labels()
			got, ok := h.Owner(tg.Hash)
			require.True(t, ok)
			require.Equal(t, "collector-"+out.Get("__tmp_hash"), got, tg.Address)
		}
	}
}

// TestStrategies checks every strategy assigns every target exactly once to a
// present collector, through joins, leaves and target changes.
func TestStrategies(t *testing.T) {
	t.Parallel()
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := New(name, 0)
			require.NoError(t, err)
			jobs := targets(1000, 4)
			check := func(collectors []string) {
				present := map[string]bool{}
				for _, c := range collectors {
					present[c] = true
				}
				for _, ts := range jobs {
					for _, tg := range ts {
						c, ok := s.Owner(tg.Hash)
						require.True(t, ok, "target %s unassigned", tg.Address)
						require.True(t, present[c], "target %s on absent collector %s", tg.Address, c)
					}
				}
			}
			s.SetCollectors(names(3))
			s.SetJobTargets(jobs)
			check(names(3))
			s.SetCollectors(names(5))
			check(names(5))
			s.SetCollectors(names(2))
			check(names(2))
			delete(jobs, "job-0")
			s.SetJobTargets(map[string][]*allocation.Target{"job-0": nil})
			check(names(2))
			_, ok := s.Owner(targets(1000, 4)["job-0"][0].Hash)
			require.False(t, ok, "a removed target still has an owner")
		})
	}
}

func TestNewUnknown(t *testing.T) {
	t.Parallel()
	_, err := New("nope", 0)
	require.Error(t, err)
}
