package relabel

import (
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	promrelabel "github.com/prometheus/prometheus/model/relabel"
)

// Service discovery attaches every piece of metadata it has to every target
// (the Kubernetes SD: ~50 __meta_* labels a target, each of a pod's labels
// and annotations twice), and Prometheus drops every __meta_* label after
// relabeling. Only the labels a job's relabel_configs read can change its
// targets, so each provider's groups are trimmed, as they arrive, to the
// __meta_* labels that some job sharing the provider reads (plus the node
// labels the per-node strategy uses); other labels are never touched. The
// relabeled targets are the same, on the allocator and on the collector that
// applies the same relabel_configs to what it is served, and Prometheus'
// discovery manager, the filter and the response cache hold the small maps
// instead of the SD's whole ones (clusterload at 50k ServiceMonitor targets:
// the SD's part of the heap 247 → 87 MiB; benchmarks/README.md).

// LabelUse is the set of __meta_* labels that relabel_configs read: exact
// names and name patterns (labelmap). It is part of a provider's config
// identity (discovery's trackedConfig), so it holds only sorted strings.
type LabelUse struct {
	Names    []string // sorted, unique
	Patterns []string // labelmap regexes as written (anchored when compiled), sorted, unique
}

// alwaysKept are the labels shardwise itself reads (per-node allocation).
var alwaysKept = []string{
	labelPodNode, labelNodeName, labelEndpointNode,
	labelEndpointSliceKind, labelEndpointSliceTarget, labelEndpointSliceNode,
}

// ReadLabels returns the __meta_* labels rcs read: every source label, the
// target label of keepequal and dropequal, and the names labelmap matches.
// labeldrop and labelkeep do not count: a __meta_* label only they see is
// dropped after relabeling either way, and a later rule that reads it adds it.
func ReadLabels(rcs []*promrelabel.Config) LabelUse {
	var u LabelUse
	for _, rc := range rcs {
		if rc == nil {
			continue
		}
		for _, ln := range rc.SourceLabels {
			u.Names = append(u.Names, string(ln))
		}
		switch rc.Action {
		case promrelabel.KeepEqual, promrelabel.DropEqual:
			u.Names = append(u.Names, rc.TargetLabel)
		case promrelabel.LabelMap:
			u.Patterns = append(u.Patterns, rc.Regex.String())
		}
	}
	u.Names = slices.DeleteFunc(u.Names, func(n string) bool { return !strings.HasPrefix(n, model.MetaLabelPrefix) })
	return u.normalized()
}

// Union returns the labels either u or v reads.
func (u LabelUse) Union(v LabelUse) LabelUse {
	return LabelUse{
		Names:    append(slices.Clone(u.Names), v.Names...),
		Patterns: append(slices.Clone(u.Patterns), v.Patterns...),
	}.normalized()
}

func (u LabelUse) normalized() LabelUse {
	slices.Sort(u.Names)
	slices.Sort(u.Patterns)
	u.Names = slices.Compact(u.Names)
	u.Patterns = slices.Compact(u.Patterns)
	if len(u.Names) == 0 {
		u.Names = nil
	}
	if len(u.Patterns) == 0 {
		u.Patterns = nil
	}
	return u
}

// Trimmer drops the __meta_* labels a provider's jobs do not read. One
// goroutine uses it (the provider's).
type Trimmer struct {
	names    map[string]bool
	patterns []promrelabel.Regexp
	decided  map[model.LabelName]bool // names seen so far and whether they are kept
}

// maxDecided bounds the trimmer's memory of names: label names are few (the
// SD builds them from label keys), but a cluster of generated keys must not
// grow it forever.
const maxDecided = 1 << 16

// NewTrimmer returns the trimmer of u. The patterns come from relabel
// configs Prometheus compiled; should one not compile again, the trimmer is
// nil, which keeps every label: never fewer labels than the rules read.
func NewTrimmer(u LabelUse) *Trimmer {
	t := &Trimmer{names: map[string]bool{}, decided: map[model.LabelName]bool{}}
	for _, n := range append(slices.Clone(alwaysKept), u.Names...) {
		t.names[n] = true
	}
	for _, p := range u.Patterns {
		re, err := promrelabel.NewRegexp(p)
		if err != nil {
			return nil
		}
		t.patterns = append(t.patterns, re)
	}
	return t
}

// keep reports whether a label is kept.
func (t *Trimmer) keep(name model.LabelName) bool {
	if !strings.HasPrefix(string(name), model.MetaLabelPrefix) {
		return true
	}
	if k, ok := t.decided[name]; ok {
		return k
	}
	k := t.names[string(name)] || slices.ContainsFunc(t.patterns, func(re promrelabel.Regexp) bool { return re.MatchString(string(name)) })
	if len(t.decided) < maxDecided {
		t.decided[name] = k
	}
	return k
}

// Groups returns tgs with every group's and target's labels trimmed. The
// groups are new; label sets that lose nothing are shared with tgs.
func (t *Trimmer) Groups(tgs []*targetgroup.Group) []*targetgroup.Group {
	if t == nil {
		return tgs
	}
	out := make([]*targetgroup.Group, len(tgs))
	for i, tg := range tgs {
		if tg == nil {
			continue
		}
		g := &targetgroup.Group{Source: tg.Source, Labels: t.labelSet(tg.Labels)}
		if tg.Targets != nil {
			g.Targets = make([]model.LabelSet, len(tg.Targets))
			for j, ls := range tg.Targets {
				g.Targets[j] = t.labelSet(ls)
			}
		}
		out[i] = g
	}
	return out
}

func (t *Trimmer) labelSet(ls model.LabelSet) model.LabelSet {
	n := 0
	for k := range ls {
		if t.keep(k) {
			n++
		}
	}
	if n == len(ls) {
		return ls
	}
	out := make(model.LabelSet, n)
	for k, v := range ls {
		if t.keep(k) {
			out[k] = v
		}
	}
	return out
}
