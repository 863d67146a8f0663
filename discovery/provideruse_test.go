package discovery

import (
	"fmt"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	promdiscovery "github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/model/labels"
	promrelabel "github.com/prometheus/prometheus/model/relabel"
	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/discovery/relabel"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

func TestLabelUsesShareAndGrow(t *testing.T) {
	t.Parallel()
	sd := func(file string) promdiscovery.Configs {
		cfg, err := allocatorconfig.LoadPromConfig(fmt.Appendf(nil, "scrape_configs:\n- job_name: x\n  file_sd_configs: [{files: [%s]}]\n", file))
		require.NoError(t, err)
		return cfg.ScrapeConfigs[0].ServiceDiscoveryConfigs
	}
	reads := func(names ...string) []*promrelabel.Config {
		var rcs []*promrelabel.Config
		for _, n := range names {
			rcs = append(rcs, &promrelabel.Config{SourceLabels: model.LabelNames{model.LabelName(n)}, Regex: promrelabel.MustNewRegexp("(.*)"),
				Action: promrelabel.Replace, TargetLabel: "x", Separator: ";", Replacement: "$1"})
		}
		return rcs
	}
	cfgs := map[string]promdiscovery.Configs{"a": sd("/f1.json"), "b": sd("/f1.json"), "c": sd("/f2.json")}
	rules := map[string][]*promrelabel.Config{"a": reads("__meta_a"), "b": reads("__meta_b"), "c": reads("__meta_c")}
	uses, byKey := labelUses(rules, cfgs, nil)
	require.Equal(t, []relabel.LabelUse{{Names: []string{"__meta_a", "__meta_b"}}}, uses["a"], "a and b share a provider: both labels")
	require.Equal(t, uses["a"], uses["b"])
	require.Equal(t, []relabel.LabelUse{{Names: []string{"__meta_c"}}}, uses["c"])
	n := 0
	for _, us := range byKey {
		n += len(us)
	}
	require.Equal(t, 2, n, "two providers")

	// b goes: the shared provider keeps what it had (no restart).
	delete(cfgs, "b")
	delete(rules, "b")
	uses, byKey = labelUses(rules, cfgs, byKey)
	require.Equal(t, []relabel.LabelUse{{Names: []string{"__meta_a", "__meta_b"}}}, uses["a"])
	// c goes and comes back: a new provider starts from its jobs' reads.
	c := cfgs["c"]
	delete(cfgs, "c")
	_, byKey = labelUses(rules, cfgs, byKey)
	cfgs["c"], rules["c"] = c, reads("__meta_d")
	uses, _ = labelUses(rules, cfgs, byKey)
	require.Equal(t, []relabel.LabelUse{{Names: []string{"__meta_d"}}}, uses["c"])
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
	prom, err := allocatorconfig.LoadPromConfig([]byte("scrape_configs:" + job("one", "__meta_read")))
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
	prom, err = allocatorconfig.LoadPromConfig([]byte("scrape_configs:" + job("one", "__meta_read") + job("two", "__meta_other")))
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
		require.True(t, promrelabel.ProcessBuilder(b, sc.RelabelConfigs...))
		require.Equal(t, want, b.Get("copied"), sc.JobName)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
}
