package relabel

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/model/labels"
	promrelabel "github.com/prometheus/prometheus/model/relabel"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

// trimCorpus reads __meta_* labels every way relabeling can.
const trimCorpus = `
scrape_configs:
- job_name: trim
  relabel_configs:
  - {source_labels: [__meta_src], target_label: s}
  - {source_labels: [__meta_keep], regex: "x|y", action: keep}
  - {source_labels: [__meta_drop], regex: "z", action: drop}
  - {source_labels: [a], target_label: __meta_eq, action: keepequal}
  - {source_labels: [b], target_label: __meta_neq, action: dropequal}
  - {source_labels: [__meta_hash, a], target_label: h, modulus: 4, action: hashmod}
  - {source_labels: [__meta_case], target_label: lc, action: lowercase}
  - {regex: "__meta_map_(.+)", action: labelmap, replacement: "m_$1"}
  - {source_labels: [a], target_label: __meta_written}
  - {source_labels: [__meta_written], target_label: w}
  - {regex: "__meta_src|__meta_unread.*", action: labeldrop}
  - {regex: "a|b|s|h|lc|m_.+|w|__.*", action: labelkeep}
  - {source_labels: [__meta_src], target_label: s2}
`

func TestReadLabels(t *testing.T) {
	t.Parallel()
	cfg, err := allocatorconfig.LoadPromConfig([]byte(trimCorpus))
	require.NoError(t, err)
	u := ReadLabels(cfg.ScrapeConfigs[0].RelabelConfigs)
	require.Equal(t, LabelUse{
		Names: []string{"__meta_case", "__meta_drop", "__meta_eq", "__meta_hash", "__meta_keep", "__meta_neq",
			"__meta_src", "__meta_written"},
		Patterns: []string{"__meta_map_(.+)"},
	}, u)
	require.Equal(t, LabelUse{}, ReadLabels(nil))
	both := ReadLabels([]*promrelabel.Config{{SourceLabels: model.LabelNames{"__meta_b", "__meta_a", "plain"}, Regex: promrelabel.MustNewRegexp("(.*)"), Action: promrelabel.Replace, TargetLabel: "x"}}).
		Union(LabelUse{Names: []string{"__meta_a", "__meta_c"}})
	require.Equal(t, LabelUse{Names: []string{"__meta_a", "__meta_b", "__meta_c"}}, both)
}

// TestTrimmedRelabelsTheSame: whatever rules of the corpora a job has, its
// targets trimmed to the labels the rules read relabel to the same targets
// as the whole ones, in Prometheus' own relabeling (keep decision and every
// label but __meta_*, which Prometheus drops after relabeling).
func TestTrimmedRelabelsTheSame(t *testing.T) {
	t.Parallel()
	var all []*promrelabel.Config
	for _, corpus := range []string{trimCorpus, ruleCorpus} {
		cfg, err := allocatorconfig.LoadPromConfig([]byte(corpus))
		require.NoError(t, err)
		all = append(all, cfg.ScrapeConfigs[0].RelabelConfigs...)
	}
	names := []string{"a", "b", "c", "__address__", "__meta_src", "__meta_keep", "__meta_drop", "__meta_eq", "__meta_neq",
		"__meta_hash", "__meta_case", "__meta_map_one", "__meta_map_two", "__meta_written", "__meta_unread", "__meta_unread_2",
		"__meta_m1", "__meta_m2", "__meta_new", "__meta_kubernetes_pod_node_name"}
	rapid.Check(t, func(t *rapid.T) {
		var rcs []*promrelabel.Config
		for i, rc := range all {
			if rapid.Bool().Draw(t, fmt.Sprint("use", i)) {
				rcs = append(rcs, rc)
			}
		}
		value := rapid.SampledFrom([]string{"x", "y", "z", "X", "xy"})
		ls := model.LabelSet{}
		for _, n := range names {
			if rapid.Bool().Draw(t, "has "+n) {
				ls[model.LabelName(n)] = model.LabelValue(value.Draw(t, n))
			}
		}
		tr := NewTrimmer(ReadLabels(rcs))
		trimmed := tr.labelSet(ls)
		for n := range ls {
			if !strings.HasPrefix(string(n), model.MetaLabelPrefix) {
				require.Contains(t, trimmed, n, "only __meta_* labels are trimmed")
			}
		}
		process := func(ls model.LabelSet) (string, bool) {
			b := labels.NewBuilder(labels.FromMap(toMap(ls)))
			keep := promrelabel.ProcessBuilder(b, rcs...)
			var out []string
			b.Labels().Range(func(l labels.Label) {
				if !strings.HasPrefix(l.Name, model.MetaLabelPrefix) {
					out = append(out, l.Name+"="+l.Value)
				}
			})
			return strings.Join(out, ","), keep
		}
		want, wantKeep := process(ls)
		got, gotKeep := process(trimmed)
		if wantKeep != gotKeep || (wantKeep && want != got) {
			t.Fatalf("whole %v: keep %v %s; trimmed %v: keep %v %s", ls, wantKeep, want, trimmed, gotKeep, got)
		}
	})
}

func TestLabelTrimmer(t *testing.T) {
	t.Parallel()
	tr := NewTrimmer(LabelUse{Names: []string{"__meta_a"}, Patterns: []string{"__meta_p_.+"}})
	full := model.LabelSet{"__address__": "h:1", "__meta_a": "1", "__meta_b": "2", "__meta_p_x": "3", "__meta_p_": "4",
		"__meta_kubernetes_pod_node_name": "n1", "team": "t"}
	group := model.LabelSet{"__meta_b": "g", "__meta_a": "g"}
	kept := model.LabelSet{"__address__": "h:2", "__meta_a": "1"}
	out := tr.Groups([]*targetgroup.Group{{Source: "s", Labels: group, Targets: []model.LabelSet{full, kept}}, nil})
	require.Len(t, out, 2)
	require.Nil(t, out[1])
	require.Equal(t, "s", out[0].Source)
	require.Equal(t, model.LabelSet{"__meta_a": "g"}, out[0].Labels)
	require.Equal(t, model.LabelSet{"__address__": "h:1", "__meta_a": "1", "__meta_p_x": "3",
		"__meta_kubernetes_pod_node_name": "n1", "team": "t"}, out[0].Targets[0], "read, matched, per-node and plain labels stay")
	require.Len(t, full, 7, "the input is not modified")
	require.Equal(t, kept, out[0].Targets[1])
	// A set that loses nothing is shared, not copied.
	out[0].Targets[1]["probe"] = "1"
	require.Equal(t, model.LabelValue("1"), kept["probe"])

	var keepAll *Trimmer
	tgs := []*targetgroup.Group{{Targets: []model.LabelSet{full}}}
	require.Equal(t, tgs, keepAll.Groups(tgs))
	require.Nil(t, NewTrimmer(LabelUse{Patterns: []string{"("}}), "a pattern that does not compile keeps every label")
}
