package relabel

import (
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	promrelabel "github.com/prometheus/prometheus/model/relabel"

	"github.com/shardwise/shardwise/allocation"
)

// ruleKind selects how a relabel rule is applied. Most rules that
// prometheus-operator generates copy a label, set a constant, cut a literal
// prefix, keep/drop on literal values or drop labels by name; applying those
// without a regular expression gives the result promrelabel.ProcessBuilder gives,
// at a fraction of the cost. Everything else goes through ProcessBuilder.
type ruleKind uint8

const (
	ruleGeneral   ruleKind = iota // promrelabel.ProcessBuilder
	ruleReplace                   // replace, regex P(.*)S or P(.+)S, replacement $1 or a literal
	ruleMatch                     // keep/drop whose regex matches a finite set of literal strings
	ruleCase                      // lowercase, uppercase
	ruleEqual                     // keepequal, dropequal
	ruleDropNames                 // labeldrop whose regex matches a finite set of literal names
)

// maxLiterals bounds the set of strings a keep/drop regex may expand to.
const maxLiterals = 64

type rule struct {
	kind   ruleKind
	cfg    *promrelabel.Config
	src    []string
	sep    string
	target string

	// ruleReplace: the joined value matches when it is prefix + capture +
	// suffix (capture non-empty if nonEmpty); the target is set to the
	// capture if capture, else to value.
	prefix, suffix string
	nonEmpty       bool
	capture        bool
	value          string

	// ruleMatch: the values the regex matches; ruleDropNames: the names it
	// matches. ruleMatch, ruleEqual: keep (true) or drop (false) on a match.
	lits   []string
	litSet map[string]struct{} // lits as a set, when there are many
	keep   bool

	upper bool // ruleCase
}

// compileRules turns relabel configs into rules.
func compileRules(rcs []*promrelabel.Config) []rule {
	out := make([]rule, 0, len(rcs))
	for _, rc := range rcs {
		out = append(out, compileRule(rc))
	}
	return out
}

func compileRule(rc *promrelabel.Config) rule {
	general := rule{kind: ruleGeneral, cfg: rc}
	src := make([]string, len(rc.SourceLabels))
	for i, s := range rc.SourceLabels {
		src[i] = string(s)
	}
	r := rule{cfg: rc, src: src, sep: rc.Separator, target: rc.TargetLabel}
	switch rc.Action {
	case promrelabel.Lowercase, promrelabel.Uppercase:
		r.kind, r.upper = ruleCase, rc.Action == promrelabel.Uppercase
		return r
	case promrelabel.KeepEqual, promrelabel.DropEqual:
		r.kind, r.keep = ruleEqual, rc.Action == promrelabel.KeepEqual
		return r
	}
	if rc.Regex.Regexp == nil {
		return general
	}
	re, err := syntax.Parse(rc.Regex.String(), syntax.Perl|syntax.DotNL) // as promrelabel.NewRegexp: (?s)
	if err != nil {
		return general
	}
	switch rc.Action {
	case promrelabel.Replace:
		// A literal target label was checked by Validate, as relabel checks it.
		if strings.Contains(rc.TargetLabel, "$") {
			return general
		}
		prefix, suffix, nonEmpty, ok := captureShape(re)
		if !ok {
			return general
		}
		switch {
		case rc.Replacement == "$1" || rc.Replacement == "${1}":
			r.capture = true
		case !strings.Contains(rc.Replacement, "$"):
			r.value = rc.Replacement
		default:
			return general
		}
		r.kind, r.prefix, r.suffix, r.nonEmpty = ruleReplace, prefix, suffix, nonEmpty
		return r
	case promrelabel.LabelDrop:
		lits, ok := literalSet(re)
		if !ok {
			return general
		}
		r.kind, r.lits = ruleDropNames, lits
		return r
	case promrelabel.Keep, promrelabel.Drop:
		lits, ok := literalSet(re)
		if !ok {
			return general
		}
		r.kind, r.lits, r.keep = ruleMatch, lits, rc.Action == promrelabel.Keep
		if len(lits) > 8 {
			r.litSet = make(map[string]struct{}, len(lits))
			for _, l := range lits {
				r.litSet[l] = struct{}{}
			}
		}
		return r
	}
	return general
}

// captureShape reports whether re is P(.*)S or P(.+)S with P and S literal
// and its only capture group the one around the dot; with the anchors
// Prometheus adds, the capture of a matching value is then the value without
// P and S, whatever the greediness.
func captureShape(re *syntax.Regexp) (prefix, suffix string, nonEmpty, ok bool) {
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	i := 0
	if i < len(subs) && subs[i].Op == syntax.OpLiteral {
		if prefix, ok = literal(subs[i]); !ok {
			return "", "", false, false
		}
		i++
	}
	if i >= len(subs) {
		return "", "", false, false
	}
	c := subs[i]
	if c.Op != syntax.OpCapture || c.Cap != 1 || len(c.Sub) != 1 {
		return "", "", false, false
	}
	dots := c.Sub[0]
	if (dots.Op != syntax.OpStar && dots.Op != syntax.OpPlus) || dots.Sub[0].Op != syntax.OpAnyChar {
		return "", "", false, false
	}
	nonEmpty = dots.Op == syntax.OpPlus
	i++
	if i < len(subs) && subs[i].Op == syntax.OpLiteral {
		if suffix, ok = literal(subs[i]); !ok {
			return "", "", false, false
		}
		i++
	}
	if i != len(subs) {
		return "", "", false, false
	}
	return prefix, suffix, nonEmpty, true
}

// literal returns the string a case-sensitive literal node matches. Literals
// holding U+FFFD are refused: the regexp engine matches an invalid byte with
// it, a string comparison does not.
func literal(re *syntax.Regexp) (string, bool) {
	if re.Op != syntax.OpLiteral || re.Flags&syntax.FoldCase != 0 || slices.Contains(re.Rune, utf8.RuneError) {
		return "", false
	}
	return string(re.Rune), true
}

// literalSet returns the strings re matches when they are finitely many, at
// most maxLiterals: literals, grouping, alternation, small character
// classes and optional parts, as in (Failed|Succeeded) or (web|api);true.
func literalSet(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpLiteral:
		s, ok := literal(re)
		return []string{s}, ok
	case syntax.OpCapture:
		return literalSet(re.Sub[0])
	case syntax.OpQuest:
		if re.Flags&syntax.NonGreedy != 0 {
			return nil, false
		}
		s, ok := literalSet(re.Sub[0])
		return union(s, []string{""}), ok
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for c := re.Rune[i]; c <= re.Rune[i+1]; c++ {
				if len(out) == maxLiterals || c == utf8.RuneError {
					return nil, false
				}
				out = append(out, string(c))
			}
		}
		return out, len(out) > 0
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			s, ok := literalSet(sub)
			if !ok {
				return nil, false
			}
			if out = union(out, s); len(out) > maxLiterals {
				return nil, false
			}
		}
		return out, true
	case syntax.OpConcat:
		out := []string{""}
		for _, sub := range re.Sub {
			s, ok := literalSet(sub)
			if !ok || len(out)*len(s) > maxLiterals {
				return nil, false
			}
			next := make([]string, 0, len(out)*len(s))
			for _, a := range out {
				for _, b := range s {
					next = append(next, a+b)
				}
			}
			out = union(nil, next)
		}
		return out, true
	}
	return nil, false
}

// union appends the strings of b not in a to a.
func union(a, b []string) []string {
	for _, s := range b {
		if !slices.Contains(a, s) {
			a = append(a, s)
		}
	}
	return a
}

// matches reports whether a ruleMatch rule's regex matches v.
func (r *rule) matches(v string) bool {
	if r.litSet != nil {
		_, ok := r.litSet[v]
		return ok
	}
	return slices.Contains(r.lits, v)
}

// relabeler holds one target's labels while rules run on it. It starts as
// the discovered labels under a small overlay of the rules' changes, which
// answers Get with a map lookup. A rule without a fast path turns it into a
// labels.Builder holding the same labels, which the remaining rules use.
//
// As in Prometheus (scrape.PopulateDiscoveredLabels), a label with an empty
// value is no label.
type relabeler struct {
	disc    allocation.Discovered
	set     []labels.Label // overlay; an empty value deletes
	lb      *labels.Builder
	built   bool // lb holds the labels
	sb      labels.ScratchBuilder
	scratch labels.Labels // lb's base, in the ScratchBuilder's reused buffer
	buf     []byte
}

// reset starts on a target's discovered labels.
func (r *relabeler) reset(disc allocation.Discovered) {
	r.disc = disc
	r.set = r.set[:0]
	r.built = false
}

// Get returns a label's value, "" if it has none.
func (r *relabeler) Get(name string) string {
	if r.built {
		return r.lb.Get(name)
	}
	for i := range r.set {
		if r.set[i].Name == name {
			return r.set[i].Value
		}
	}
	return r.disc.Get(name)
}

// Set sets a label; an empty value deletes it.
func (r *relabeler) Set(name, value string) {
	if r.built {
		r.lb.Set(name, value)
		return
	}
	for i := range r.set {
		if r.set[i].Name == name {
			r.set[i].Value = value
			return
		}
	}
	r.set = append(r.set, labels.Label{Name: name, Value: value})
}

// builder returns the labels as a labels.Builder, building it on first use.
func (r *relabeler) builder() *labels.Builder {
	if r.built {
		return r.lb
	}
	r.sb.Reset()
	r.disc.Range(func(l labels.Label) {
		if l.Value != "" && !r.overlaid(l.Name) {
			r.sb.Add(l.Name, l.Value)
		}
	})
	for _, l := range r.set {
		if l.Value != "" {
			r.sb.Add(l.Name, l.Value)
		}
	}
	r.sb.Sort()
	r.sb.Overwrite(&r.scratch)
	if r.lb == nil {
		r.lb = labels.NewBuilder(labels.EmptyLabels())
	}
	r.lb.Reset(r.scratch)
	r.built = true
	return r.lb
}

func (r *relabeler) overlaid(name string) bool {
	for i := range r.set {
		if r.set[i].Name == name {
			return true
		}
	}
	return false
}

// joined returns the rule's source values joined by its separator; the
// result aliases r.buf when there are several sources.
func (r *relabeler) joined(ru *rule) string {
	if len(ru.src) == 1 {
		return r.Get(ru.src[0])
	}
	b := r.buf[:0]
	for k, s := range ru.src {
		if k > 0 {
			b = append(b, ru.sep...)
		}
		b = append(b, r.Get(s)...)
	}
	r.buf = b
	return unsafeString(b)
}

// apply runs the rules; false means the target is dropped.
func (r *relabeler) apply(rules []rule) bool {
	for i := range rules {
		ru := &rules[i]
		switch ru.kind {
		case ruleReplace:
			v := r.joined(ru)
			if len(v) < len(ru.prefix)+len(ru.suffix) || !strings.HasPrefix(v, ru.prefix) || !strings.HasSuffix(v, ru.suffix) {
				continue
			}
			c := v[len(ru.prefix) : len(v)-len(ru.suffix)]
			if ru.nonEmpty && c == "" {
				continue
			}
			if !ru.capture {
				c = ru.value
			} else if len(ru.src) > 1 {
				c = strings.Clone(c) // it aliases r.buf
			}
			r.Set(ru.target, c)
		case ruleMatch:
			if ru.matches(r.joined(ru)) != ru.keep {
				return false
			}
		case ruleCase:
			v := r.joined(ru)
			if ru.upper {
				v = strings.ToUpper(v)
			} else {
				v = strings.ToLower(v)
			}
			if len(ru.src) > 1 {
				v = strings.Clone(v) // it may alias r.buf
			}
			r.Set(ru.target, v)
		case ruleEqual:
			if (r.Get(ru.target) == r.joined(ru)) != ru.keep {
				return false
			}
		case ruleDropNames:
			for _, name := range ru.lits {
				if r.Get(name) != "" {
					r.Set(name, "")
				}
			}
		default:
			if !promrelabel.ProcessBuilder(r.builder(), ru.cfg) {
				return false
			}
		}
	}
	return true
}

// identityLabels appends the labels that make the target's identity to dst:
// every label but __meta_*, sorted by name.
func (r *relabeler) identityLabels(dst []labels.Label) []labels.Label {
	start := len(dst)
	if r.built {
		r.lb.Range(func(l labels.Label) {
			if !strings.HasPrefix(l.Name, model.MetaLabelPrefix) && l.Name != allocation.WeightLabel {
				dst = append(dst, l)
			}
		})
	} else {
		add := func(name string) {
			if strings.HasPrefix(name, model.MetaLabelPrefix) || name == allocation.WeightLabel {
				return
			}
			if v := r.Get(name); v != "" {
				dst = append(dst, labels.Label{Name: name, Value: v})
			}
		}
		// The __meta_ names are one run of a sorted list: skip it.
		if own := r.disc.OwnNames; len(own) == len(r.disc.Own) {
			lo, hi := metaSpan(len(own), func(i int) string { return own[i] })
			for _, n := range own[:lo] {
				add(n)
			}
			for _, n := range own[hi:] {
				add(n)
			}
		} else {
			for n := range r.disc.Own {
				add(string(n))
			}
		}
		g := r.disc.Group
		lo, hi := metaSpan(len(g), func(i int) string { return g[i].Name })
		for _, l := range g[:lo] {
			add(l.Name)
		}
		for _, l := range g[hi:] {
			add(l.Name)
		}
		for _, l := range r.set {
			add(l.Name)
		}
	}
	ls := dst[start:]
	slices.SortFunc(ls, func(a, b labels.Label) int { return strings.Compare(a.Name, b.Name) })
	// Without the builder, a name both discovered and overlaid, or in both
	// halves, came twice with the same value.
	ls = slices.CompactFunc(ls, func(a, b labels.Label) bool { return a.Name == b.Name })
	return dst[:start+len(ls)]
}

// metaSpan returns the run [lo, hi) of names with the __meta_ prefix in a
// sorted list of n names.
func metaSpan(n int, name func(int) string) (lo, hi int) {
	// "`" follows "_": every __meta_ name sorts before "__meta`".
	lo = searchNames(n, name, model.MetaLabelPrefix)
	hi = lo + searchNames(n-lo, func(i int) string { return name(lo + i) }, "__meta`")
	return lo, hi
}

// searchNames returns the index of the first of n sorted names >= s.
func searchNames(n int, name func(int) string, s string) int {
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if name(m) < s {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// unsafeString views b as a string for a comparison that does not retain it.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
