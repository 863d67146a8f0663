package discovery

import (
	"regexp"
	"slices"
	"strings"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
)

// ruleKind selects how a relabel rule is applied. Most rules that
// prometheus-operator generates are plain copies, constants or keep/drop on
// literal values; applying those without a regular expression gives the same
// result as relabel.ProcessBuilder at a fraction of the cost. Everything else
// goes through ProcessBuilder.
type ruleKind int

const (
	ruleGeneral ruleKind = iota
	ruleCopy             // replace, one source, regex (.*), replacement $1: target = source
	ruleConst            // replace, no source, regex (.*), literal replacement: target = value
	ruleMatch            // keep/drop whose regex matches a set of literal strings
	rulePrefix           // replace, regex P(.*) with P literal, replacement $1: target = sources minus P
)

type rule struct {
	kind   ruleKind
	cfg    *relabel.Config
	src    []string
	sep    string
	target string
	value  string
	lits   []string // ruleMatch: the values the regex matches
	keep   bool     // ruleMatch: keep (true) or drop (false) on a match
}

// compileRules turns relabel configs into rules.
func compileRules(rcs []*relabel.Config) []rule {
	out := make([]rule, 0, len(rcs))
	for _, rc := range rcs {
		out = append(out, compileRule(rc))
	}
	return out
}

func compileRule(rc *relabel.Config) rule {
	r := rule{kind: ruleGeneral, cfg: rc}
	if rc.Regex.Regexp == nil {
		return r
	}
	re := rc.Regex.String()
	src := make([]string, len(rc.SourceLabels))
	for i, s := range rc.SourceLabels {
		src[i] = string(s)
	}
	switch rc.Action {
	case relabel.Replace:
		if strings.Contains(rc.TargetLabel, "$") {
			return r
		}
		if prefix, ok := strings.CutSuffix(re, "(.*)"); ok && prefix != "" && isLiteral(prefix) &&
			(rc.Replacement == "$1" || rc.Replacement == "${1}") {
			return rule{kind: rulePrefix, cfg: rc, src: src, sep: rc.Separator, target: rc.TargetLabel, value: prefix}
		}
		if re != "(.*)" {
			return r
		}
		switch {
		case len(src) == 1 && (rc.Replacement == "$1" || rc.Replacement == "${1}"):
			return rule{kind: ruleCopy, cfg: rc, src: src, target: rc.TargetLabel}
		case len(src) == 0 && !strings.Contains(rc.Replacement, "$"):
			return rule{kind: ruleConst, cfg: rc, target: rc.TargetLabel, value: rc.Replacement}
		}
	case relabel.Keep, relabel.Drop:
		if lits, ok := literalAlternatives(re); ok {
			return rule{kind: ruleMatch, cfg: rc, src: src, sep: rc.Separator, lits: lits, keep: rc.Action == relabel.Keep}
		}
	}
	return r
}

// literalAlternatives returns the strings a regular expression matches when
// it is a literal, a literal with grouping parentheses, or one group of
// literal alternatives such as (Failed|Succeeded).
func literalAlternatives(re string) ([]string, bool) {
	if plain := strings.ReplaceAll(strings.ReplaceAll(re, "(", ""), ")", ""); isLiteral(plain) {
		return []string{plain}, true
	}
	if len(re) >= 2 && re[0] == '(' && re[len(re)-1] == ')' {
		inner := re[1 : len(re)-1]
		if strings.ContainsAny(inner, "()") {
			return nil, false
		}
		alts := strings.Split(inner, "|")
		for _, a := range alts {
			if !isLiteral(a) {
				return nil, false
			}
		}
		return alts, true
	}
	return nil, false
}

func isLiteral(s string) bool { return regexp.QuoteMeta(s) == s }

// joined returns the rule's source values joined by its separator; the
// result aliases buf when there are several sources.
func (r *rule) joined(lb *labels.Builder, buf *[]byte) string {
	if len(r.src) == 1 {
		return lb.Get(r.src[0])
	}
	b := (*buf)[:0]
	for k, s := range r.src {
		if k > 0 {
			b = append(b, r.sep...)
		}
		b = append(b, lb.Get(s)...)
	}
	*buf = b
	return unsafeString(b)
}

// applyRules relabels lb; false means the target is dropped.
func applyRules(lb *labels.Builder, rules []rule, buf *[]byte) bool {
	for i := range rules {
		r := &rules[i]
		switch r.kind {
		case ruleCopy:
			lb.Set(r.target, lb.Get(r.src[0])) // Set of "" deletes, as Replace does
		case ruleConst:
			lb.Set(r.target, r.value)
		case ruleMatch:
			if slices.Contains(r.lits, r.joined(lb, buf)) != r.keep {
				return false
			}
		case rulePrefix:
			if rest, ok := strings.CutPrefix(r.joined(lb, buf), r.value); ok {
				if len(r.src) > 1 {
					rest = strings.Clone(rest) // it aliases buf
				}
				lb.Set(r.target, rest)
			}
		default:
			if !relabel.ProcessBuilder(lb, r.cfg) {
				return false
			}
		}
	}
	return true
}

// unsafeString views b as a string for a comparison that does not retain it.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
