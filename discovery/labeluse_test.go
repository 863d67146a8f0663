package discovery

import (
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	promdiscovery "github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/shardwise/shardwise/allocation"
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
	cfg, err := LoadPromConfig([]byte(trimCorpus))
	require.NoError(t, err)
	u := readLabels(cfg.ScrapeConfigs[0].RelabelConfigs)
	require.Equal(t, labelUse{
		Names: []string{"__meta_case", "__meta_drop", "__meta_eq", "__meta_hash", "__meta_keep", "__meta_neq",
			"__meta_src", "__meta_written"},
		Patterns: []string{"__meta_map_(.+)"},
	}, u)
	require.Equal(t, labelUse{}, readLabels(nil))
	both := readLabels([]*relabel.Config{{SourceLabels: model.LabelNames{"__meta_b", "__meta_a", "plain"}, Regex: relabel.MustNewRegexp("(.*)"), Action: relabel.Replace, TargetLabel: "x"}}).
		union(labelUse{Names: []string{"__meta_a", "__meta_c"}})
	require.Equal(t, labelUse{Names: []string{"__meta_a", "__meta_b", "__meta_c"}}, both)
}

// TestTrimmedRelabelsTheSame: whatever rules of the corpora a job has, its
// targets trimmed to the labels the rules read relabel to the same targets
// as the whole ones, in Prometheus' own relabeling (keep decision and every
// label but __meta_*, which Prometheus drops after relabeling).
func TestTrimmedRelabelsTheSame(t *testing.T) {
	t.Parallel()
	var all []*relabel.Config
	for _, corpus := range []string{trimCorpus, ruleCorpus} {
		cfg, err := LoadPromConfig([]byte(corpus))
		require.NoError(t, err)
		all = append(all, cfg.ScrapeConfigs[0].RelabelConfigs...)
	}
	names := []string{"a", "b", "c", "__address__", "__meta_src", "__meta_keep", "__meta_drop", "__meta_eq", "__meta_neq",
		"__meta_hash", "__meta_case", "__meta_map_one", "__meta_map_two", "__meta_written", "__meta_unread", "__meta_unread_2",
		"__meta_m1", "__meta_m2", "__meta_new", "__meta_kubernetes_pod_node_name"}
	rapid.Check(t, func(t *rapid.T) {
		var rcs []*relabel.Config
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
		tr := newLabelTrimmer(readLabels(rcs))
		trimmed := tr.labelSet(ls)
		for n := range ls {
			if !strings.HasPrefix(string(n), model.MetaLabelPrefix) {
				require.Contains(t, trimmed, n, "only __meta_* labels are trimmed")
			}
		}
		process := func(ls model.LabelSet) (string, bool) {
			b := labels.NewBuilder(labels.FromMap(toMap(ls)))
			keep := relabel.ProcessBuilder(b, rcs...)
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
	tr := newLabelTrimmer(labelUse{Names: []string{"__meta_a"}, Patterns: []string{"__meta_p_.+"}})
	full := model.LabelSet{"__address__": "h:1", "__meta_a": "1", "__meta_b": "2", "__meta_p_x": "3", "__meta_p_": "4",
		"__meta_kubernetes_pod_node_name": "n1", "team": "t"}
	group := model.LabelSet{"__meta_b": "g", "__meta_a": "g"}
	kept := model.LabelSet{"__address__": "h:2", "__meta_a": "1"}
	out := tr.groups([]*targetgroup.Group{{Source: "s", Labels: group, Targets: []model.LabelSet{full, kept}}, nil})
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

	var keepAll *labelTrimmer
	tgs := []*targetgroup.Group{{Targets: []model.LabelSet{full}}}
	require.Equal(t, tgs, keepAll.groups(tgs))
	require.Nil(t, newLabelTrimmer(labelUse{Patterns: []string{"("}}), "a pattern that does not compile keeps every label")
}

func TestLabelUsesShareAndGrow(t *testing.T) {
	t.Parallel()
	sd := func(file string) promdiscovery.Configs {
		cfg, err := LoadPromConfig(fmt.Appendf(nil, "scrape_configs:\n- job_name: x\n  file_sd_configs: [{files: [%s]}]\n", file))
		require.NoError(t, err)
		return cfg.ScrapeConfigs[0].ServiceDiscoveryConfigs
	}
	reads := func(names ...string) []*relabel.Config {
		var rcs []*relabel.Config
		for _, n := range names {
			rcs = append(rcs, &relabel.Config{SourceLabels: model.LabelNames{model.LabelName(n)}, Regex: relabel.MustNewRegexp("(.*)"),
				Action: relabel.Replace, TargetLabel: "x", Separator: ";", Replacement: "$1"})
		}
		return rcs
	}
	cfgs := map[string]promdiscovery.Configs{"a": sd("/f1.json"), "b": sd("/f1.json"), "c": sd("/f2.json")}
	rules := map[string][]*relabel.Config{"a": reads("__meta_a"), "b": reads("__meta_b"), "c": reads("__meta_c")}
	uses, byKey := labelUses(rules, cfgs, nil)
	require.Equal(t, []labelUse{{Names: []string{"__meta_a", "__meta_b"}}}, uses["a"], "a and b share a provider: both labels")
	require.Equal(t, uses["a"], uses["b"])
	require.Equal(t, []labelUse{{Names: []string{"__meta_c"}}}, uses["c"])
	n := 0
	for _, us := range byKey {
		n += len(us)
	}
	require.Equal(t, 2, n, "two providers")

	// b goes: the shared provider keeps what it had (no restart).
	delete(cfgs, "b")
	delete(rules, "b")
	uses, byKey = labelUses(rules, cfgs, byKey)
	require.Equal(t, []labelUse{{Names: []string{"__meta_a", "__meta_b"}}}, uses["a"])
	// c goes and comes back: a new provider starts from its jobs' reads.
	c := cfgs["c"]
	delete(cfgs, "c")
	_, byKey = labelUses(rules, cfgs, byKey)
	cfgs["c"], rules["c"] = c, reads("__meta_d")
	uses, _ = labelUses(rules, cfgs, byKey)
	require.Equal(t, []labelUse{{Names: []string{"__meta_d"}}}, uses["c"])
}

// TestManagerServesReadLabels: a job is served the __meta_* labels its
// relabeling reads (and those of the jobs sharing its provider), not the
// others; a job added later that reads more restarts the shared provider
// with the larger set, and the targets carry it.
func TestManagerServesReadLabels(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := dir + "/targets.json"
	writeFile(t, file, `[{"targets": ["h1:9090"], "labels": {"__meta_read": "r", "__meta_other": "o", "team": "t"}}]`)
	m, _ := startManager(t, ManagerOptions{})
	job := func(name, reads string) string {
		return fmt.Sprintf(`
  - job_name: %s
    file_sd_configs: [{files: [%s], refresh_interval: 1h}]
    relabel_configs:
      - {source_labels: [%s], target_label: copied}
`, name, file, reads)
	}
	labelsOf := func(ts []*allocation.Target) map[string]string {
		require.Len(t, ts, 1)
		out := map[string]string{}
		ts[0].Labels.Range(func(l labels.Label) { out[l.Name] = l.Value })
		return out
	}
	prom, err := LoadPromConfig([]byte("scrape_configs:" + job("one", "__meta_read")))
	require.NoError(t, err)
	require.NoError(t, m.ApplyConfig(prom))
	u := recvUpdate(t, m.Updates())
	got := labelsOf(u.Targets["one"])
	require.Equal(t, "r", got["__meta_read"])
	require.Equal(t, "t", got["team"])
	require.NotContains(t, got, "__meta_other", "read by no rule")
	require.NotContains(t, got, "__meta_filepath", "read by no rule")

	// A second job on the same file reads __meta_other: the shared provider
	// restarts with both, and both jobs are served both.
	prom, err = LoadPromConfig([]byte("scrape_configs:" + job("one", "__meta_read") + job("two", "__meta_other")))
	require.NoError(t, err)
	require.NoError(t, m.ApplyConfig(prom))
	deadline := time.Now().Add(20 * time.Second)
	state := map[string][]*allocation.Target{}
	for len(state["one"]) == 0 || len(state["two"]) == 0 || labelsOf(state["one"])["__meta_other"] == "" {
		require.True(t, time.Now().Before(deadline), "no update with both jobs serving __meta_other")
		maps.Copy(state, recvUpdate(t, m.Updates()).Targets)
	}
	for _, j := range []string{"one", "two"} {
		got := labelsOf(state[j])
		require.Equal(t, "r", got["__meta_read"], j)
		require.Equal(t, "o", got["__meta_other"], j)
		require.NotContains(t, got, "__meta_filepath", j)
	}
	// What a collector does with what it is served: the job's relabeling.
	for i, want := range []string{"r", "o"} {
		sc := prom.ScrapeConfigs[i]
		b := labels.NewBuilder(labels.FromMap(labelsOf(state[sc.JobName])))
		require.True(t, relabel.ProcessBuilder(b, sc.RelabelConfigs...))
		require.Equal(t, want, b.Get("copied"), sc.JobName)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
}
