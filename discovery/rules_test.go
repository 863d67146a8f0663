package discovery

import (
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
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
  - {source_labels: [a, b], separator: ";", regex: "(x);y", action: keep}
  - {source_labels: [a], regex: "(x|y|z)", action: keep}
  - {source_labels: [b], regex: "y", action: drop}
  - {source_labels: [a], regex: "x.*", action: keep}
  - {source_labels: [a], regex: "(.*)", target_label: "t_$1", replacement: "$1"}
  - {source_labels: [a], regex: "(x)", target_label: t3, replacement: "pre-$1"}
  - {source_labels: [a, b], separator: ";", regex: "x;(.*)", target_label: t4}
  - {source_labels: [b], regex: "y(.*)", target_label: t5, replacement: "${1}"}
  - {source_labels: [a, b], regex: "x;(.*)", target_label: t6, replacement: "<$1>"}
  - {regex: "t.*", action: labeldrop}
`

func TestRulesMatchProcessBuilder(t *testing.T) {
	t.Parallel()
	cfg, err := LoadPromConfig([]byte(ruleCorpus))
	require.NoError(t, err)
	all := cfg.ScrapeConfigs[0].RelabelConfigs
	kinds := map[ruleKind]int{}
	for _, r := range compileRules(all) {
		kinds[r.kind]++
	}
	require.Equal(t, map[ruleKind]int{ruleCopy: 3, ruleConst: 2, ruleMatch: 3, rulePrefix: 2, ruleGeneral: 5}, kinds)

	rapid.Check(t, func(t *rapid.T) {
		// A random subsequence of the corpus on random labels.
		var rcs []*relabel.Config
		for i, rc := range all {
			if rapid.Bool().Draw(t, fmt.Sprint("use", i)) {
				rcs = append(rcs, rc)
			}
		}
		value := rapid.SampledFrom([]string{"", "x", "y", "z", "xx", "x;y", "yy", "y;"})
		m := map[string]string{"a": value.Draw(t, "a"), "b": value.Draw(t, "b"), "__address__": "h:1"}
		base := labels.FromMap(m)

		want := labels.NewBuilder(base)
		wantKeep := relabel.ProcessBuilder(want, rcs...)
		got := labels.NewBuilder(base)
		var buf []byte
		gotKeep := applyRules(got, compileRules(rcs), &buf)
		if wantKeep != gotKeep {
			t.Fatalf("keep: want %v got %v for %v", wantKeep, gotKeep, base)
		}
		if wantKeep && !labels.Equal(want.Labels(), got.Labels()) {
			t.Fatalf("labels: want %v got %v", want.Labels(), got.Labels())
		}
	})
}

func TestLiteralAlternatives(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		re   string
		want []string
	}{
		{"metrics", []string{"metrics"}},
		{"(web);true", []string{"web;true"}},
		{"(Failed|Succeeded)", []string{"Failed", "Succeeded"}},
		{"a|b", nil},
		{"x.*", nil},
		{"(a)|(b)", nil},
		{`a\.b`, nil},
		{"$(SHARD);|.+;.+", nil},
	} {
		t.Run(tc.re, func(t *testing.T) {
			t.Parallel()
			got, ok := literalAlternatives(tc.re)
			require.Equal(t, tc.want != nil, ok)
			require.Equal(t, tc.want, got)
		})
	}
}
