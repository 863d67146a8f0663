package relabel

import (
	"testing"

	"github.com/prometheus/common/model"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

// TestFilterWeight: a relabel rule sets __shardwise_weight from a pod
// annotation; the target carries that weight, a changed weight keeps the
// target's identity, and a missing or malformed one counts as 1 (0).
func TestFilterWeight(t *testing.T) {
	t.Parallel()
	cfg, err := allocatorconfig.LoadPromConfig([]byte(`
scrape_configs:
- job_name: w
  relabel_configs:
  - source_labels: [__meta_kubernetes_pod_annotation_shardwise_io_weight]
    regex: (.+)
    target_label: __shardwise_weight
- job_name: renamed
  relabel_configs:
  - source_labels: [__meta_kubernetes_pod_name]
    target_label: instance
`))
	require.NoError(t, err)
	f := NewFilter(allocatorconfig.FilterRelabelConfig)
	f.ApplyConfig(map[string]*promconfig.ScrapeConfig{"w": cfg.ScrapeConfigs[0], "renamed": cfg.ScrapeConfigs[1]})
	process := func(weight string) (uint32, uint64) {
		tl := model.LabelSet{model.AddressLabel: "10.0.0.1:9100", "__meta_kubernetes_pod_name": "p"}
		if weight != "" {
			tl["__meta_kubernetes_pod_annotation_shardwise_io_weight"] = model.LabelValue(weight)
		}
		got := f.Process(map[string][]*targetgroup.Group{"w": {{Source: "s", Targets: []model.LabelSet{tl}}}})["w"]
		require.Len(t, got, 1)
		return got[0].Weight, got[0].Hash
	}
	w, id := process("12000")
	require.Equal(t, uint32(12000), w)

	// Instance: the relabeled address, or the instance a rule sets (what a
	// backend's series are labelled with, for learned weights).
	tl := model.LabelSet{model.AddressLabel: "10.0.0.1:9100", "__meta_kubernetes_pod_name": "p"}
	got := f.Process(map[string][]*targetgroup.Group{
		"w":       {{Source: "s", Targets: []model.LabelSet{tl}}},
		"renamed": {{Source: "s", Targets: []model.LabelSet{tl}}},
	})
	require.Equal(t, "10.0.0.1:9100", got["w"][0].Instance())
	require.Equal(t, "p", got["renamed"][0].Instance())
	w, id2 := process("300.4")
	require.Equal(t, uint32(300), w)
	require.Equal(t, id, id2, "the weight is not part of the identity")
	for _, bad := range []string{"", "heavy", "-5", "0", "NaN"} {
		w, id3 := process(bad)
		require.Zero(t, w, "%q", bad)
		require.Equal(t, id, id3)
	}
	w, _ = process("1e12")
	require.Equal(t, uint32(1<<32-1), w, "capped")
}
