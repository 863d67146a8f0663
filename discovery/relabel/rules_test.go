package relabel

import (
	"fmt"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	promrelabel "github.com/prometheus/prometheus/model/relabel"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

// ruleCorpus mixes rules that take the fast paths with rules that do not.
const ruleCorpus = `
scrape_configs:
- job_name: rules
  relabel_configs:
  - {source_labels: [a], target_label: t1}
  - {source_labels: [a], target_label: t2, replacement: "${1}"}
  - {source_labels: [missing], target_label: a}
  - {target_label: c1, replacement: const}
  - {target_label: b, replacement: ""}
  - {source_labels: [a], regex: "(.+)", target_label: t7, replacement: "$1"}
  - {source_labels: [a], regex: "(.+)", target_label: t8, replacement: "seen"}
  - {source_labels: [a, b], separator: ";", target_label: t9}
  - {source_labels: [a, b], separator: ";", regex: "x;(.*)", target_label: t4}
  - {source_labels: [b], regex: "y(.*)", target_label: t5, replacement: "${1}"}
  - {source_labels: [a, b], regex: "(.+);", target_label: t10}
  - {source_labels: [a, b], separator: "", regex: "x(.*?)y", target_label: t11}
  - {source_labels: [a], target_label: __meta_new}
  - {source_labels: [__meta_m1], target_label: c}
  - {source_labels: [c], target_label: __address__}
  - {source_labels: [a, b], separator: ";", regex: "(x);y", action: keep}
  - {source_labels: [a], regex: "(x|y|z)", action: keep}
  - {source_labels: [b], regex: "y", action: drop}
  - {source_labels: [a, c], regex: "(x|xx|yy);(x|y)?", action: drop}
  - {source_labels: [a], regex: "[xyz]", action: keep}
  - {source_labels: [a, b], target_label: t12, action: lowercase}
  - {source_labels: [b], target_label: t13, action: uppercase}
  - {source_labels: [a], target_label: b, action: keepequal}
  - {source_labels: [a], target_label: c, action: dropequal}
  - {source_labels: [a], regex: "x.*", action: keep}
  - {source_labels: [a], regex: "(?i)x", action: keep}
  - {source_labels: [a], regex: "(.*)", target_label: "t_$1", replacement: "$1"}
  - {source_labels: [a], regex: "(x)", target_label: t3, replacement: "pre-$1"}
  - {source_labels: [a, b], regex: "x;(.*)", target_label: t6, replacement: "<$1>"}
  - {regex: "__meta_(m.)", action: labelmap, replacement: "mapped_$1"}
  - {regex: "t.*", action: labeldrop}
  - {regex: "(c|z|__meta_m1)", action: labeldrop}
  - {regex: "b", action: labeldrop}
  - {source_labels: [a], target_label: t14, modulus: 3, action: hashmod}
`

func corpusRules(t testing.TB) []*promrelabel.Config {
	t.Helper()
	cfg, err := allocatorconfig.LoadPromConfig([]byte(ruleCorpus))
	require.NoError(t, err)
	return cfg.ScrapeConfigs[0].RelabelConfigs
}

func TestCompileRuleKinds(t *testing.T) {
	t.Parallel()
	kinds := map[ruleKind]int{}
	for _, r := range compileRules(corpusRules(t)) {
		kinds[r.kind]++
	}
	require.Equal(t, map[ruleKind]int{ruleReplace: 15, ruleMatch: 5, ruleCase: 2, ruleEqual: 2, ruleDropNames: 2, ruleGeneral: 8}, kinds)
}

// TestRelabelerMatchesProcessBuilder checks the relabeler, fast paths and
// the switch to a labels.Builder included, against Prometheus applying the
// same rules to the merged labels: same keep decision, same labels, same
// identity labels.
func TestRelabelerMatchesProcessBuilder(t *testing.T) {
	t.Parallel()
	all := corpusRules(t)
	seeds := []labels.Label{{Name: "job", Value: "j"}, {Name: "__scheme__", Value: "http"}}
	names := []string{"a", "b", "c", "job", "__address__", "__meta_m1", "__meta_m2", "__scheme__", "z"}
	rapid.Check(t, func(t *rapid.T) {
		// A random subsequence of the corpus on random labels.
		var rcs []*promrelabel.Config
		for i, rc := range all {
			if rapid.Bool().Draw(t, fmt.Sprint("use", i)) {
				rcs = append(rcs, rc)
			}
		}
		value := rapid.SampledFrom([]string{"", "x", "y", "z", "xx", "x;y", "yy", "y;", "X", "xy", "x\ny", "\xff", "é"})
		group := map[string]string{}
		own := model.LabelSet{}
		for _, n := range names {
			if rapid.Bool().Draw(t, "in group "+n) {
				group[n] = value.Draw(t, "group "+n)
			}
			if rapid.Bool().Draw(t, "own "+n) {
				own[model.LabelName(n)] = model.LabelValue(value.Draw(t, "own "+n))
			}
		}
		gl := sortedLabels(nil, toLabelSet(group))
		ownNames := make([]string, 0, len(own))
		for n := range own {
			ownNames = append(ownNames, string(n))
		}
		slices.Sort(ownNames)
		d := allocation.Discovered{Group: gl, Own: own, OwnNames: ownNames}

		// Prometheus: merged labels without empty values, seeds, rules.
		merged := map[string]string{}
		for _, m := range []map[string]string{group, toMap(own)} {
			for n, v := range m {
				merged[n] = v
			}
		}
		for n, v := range merged {
			if v == "" {
				delete(merged, n)
			}
		}
		for _, s := range seeds {
			if merged[s.Name] == "" {
				merged[s.Name] = s.Value
			}
		}
		want := labels.NewBuilder(labels.FromMap(merged))
		wantKeep := promrelabel.ProcessBuilder(want, rcs...)

		var r relabeler
		r.reset(d)
		for _, s := range seeds {
			if r.Get(s.Name) == "" {
				r.Set(s.Name, s.Value)
			}
		}
		gotKeep := r.apply(compileRules(rcs))
		if wantKeep != gotKeep {
			t.Fatalf("keep: want %v got %v for %v", wantKeep, gotKeep, merged)
		}
		if !wantKeep {
			return
		}
		gotID := r.identityLabels(nil)
		var wantID []labels.Label
		want.Labels().Range(func(l labels.Label) {
			if !strings.HasPrefix(l.Name, model.MetaLabelPrefix) {
				wantID = append(wantID, l)
			}
		})
		require.Equal(t, wantID, gotID, "identity labels")
		require.Equal(t, want.Labels().String(), r.builder().Labels().String(), "labels")
	})
}

func toLabelSet(m map[string]string) model.LabelSet {
	ls := make(model.LabelSet, len(m))
	for n, v := range m {
		ls[model.LabelName(n)] = model.LabelValue(v)
	}
	return ls
}

func toMap(ls model.LabelSet) map[string]string {
	m := make(map[string]string, len(ls))
	for n, v := range ls {
		m[string(n)] = string(v)
	}
	return m
}

func TestLiteralSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		re   string
		want []string
	}{
		{"metrics", []string{"metrics"}},
		{"(web);true", []string{"web;true"}},
		{"(Failed|Succeeded)", []string{"Failed", "Succeeded"}},
		{"(web|api);true", []string{"api;true", "web;true"}},
		{"a|b", []string{"a", "b"}},
		{"(a)|(b)", []string{"a", "b"}},
		{`a\.b`, []string{"a.b"}},
		{"[ab]c?", []string{"a", "ac", "b", "bc"}},
		{"", []string{""}},
		{"x.*", nil},
		{"(?i)abc", nil},
		{"[a-z]{2}", nil},
		{"$(SHARD);|.+;.+", nil},
		{"[0-9]+", nil},
	} {
		t.Run(tc.re, func(t *testing.T) {
			t.Parallel()
			re, err := syntax.Parse(tc.re, syntax.Perl|syntax.DotNL)
			require.NoError(t, err)
			got, ok := literalSet(re)
			require.Equal(t, tc.want != nil, ok)
			slices.Sort(got)
			if tc.want == nil {
				got = nil
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestCaptureShape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		re             string
		prefix, suffix string
		nonEmpty, ok   bool
	}{
		{"(.*)", "", "", false, true},
		{"(.+)", "", "", true, true},
		{"Node;(.*)", "Node;", "", false, true},
		{"(.+);", "", ";", true, true},
		{`a\.(.*)\.b`, "a.", ".b", false, true},
		{"x(.*?)y", "x", "y", false, true},
		{"(x)", "", "", false, false},
		{"(.*)(.*)", "", "", false, false},
		{"(?:.*)", "", "", false, false},
		{"(?i)a(.*)", "", "", false, false},
		{"a(.)b", "", "", false, false},
		{"([^;]*)", "", "", false, false},
	} {
		t.Run(tc.re, func(t *testing.T) {
			t.Parallel()
			re, err := syntax.Parse(tc.re, syntax.Perl|syntax.DotNL)
			require.NoError(t, err)
			p, s, ne, ok := captureShape(re)
			require.Equal(t, tc.ok, ok)
			if ok {
				require.Equal(t, []any{tc.prefix, tc.suffix, tc.nonEmpty}, []any{p, s, ne})
			}
		})
	}
}
