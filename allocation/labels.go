package allocation

import (
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
)

// Discovered is a target's discovered labels before relabeling: its group's
// labels merged with its own, its own winning on a name clash. Both halves are
// sorted by name and never modified, and Group is shared by every target of
// one target group, so a target costs a copy of its own labels only (about
// half of ~40 Kubernetes meta labels) instead of an encoded copy of all of
// them.
type Discovered struct {
	Group []labels.Label
	Own   []labels.Label
}

// DiscoveredOf wraps a complete label set, for callers without groups.
func DiscoveredOf(ls labels.Labels) Discovered {
	own := make([]labels.Label, 0, ls.Len())
	ls.Range(func(l labels.Label) { own = append(own, l) })
	return Discovered{Own: own}
}

// Range calls f for each label of the merged set, in name order.
func (d Discovered) Range(f func(l labels.Label)) {
	g, o := d.Group, d.Own
	for len(g) > 0 || len(o) > 0 {
		switch {
		case len(g) == 0:
			f(o[0])
			o = o[1:]
		case len(o) == 0:
			f(g[0])
			g = g[1:]
		default:
			switch c := strings.Compare(g[0].Name, o[0].Name); {
			case c < 0:
				f(g[0])
				g = g[1:]
			case c > 0:
				f(o[0])
				o = o[1:]
			default: // the target's own label wins
				f(o[0])
				g, o = g[1:], o[1:]
			}
		}
	}
}

// Get returns the value of the named label, "" when absent.
func (d Discovered) Get(name string) string {
	if v, ok := find(d.Own, name); ok {
		return v
	}
	v, _ := find(d.Group, name)
	return v
}

func find(ls []labels.Label, name string) (string, bool) {
	i, ok := slices.BinarySearchFunc(ls, name, func(l labels.Label, n string) int { return strings.Compare(l.Name, n) })
	if !ok {
		return "", false
	}
	return ls[i].Value, true
}

// Len returns the number of labels of the merged set.
func (d Discovered) Len() int {
	n := 0
	d.Range(func(labels.Label) { n++ })
	return n
}

// Labels returns the merged set as labels.Labels.
func (d Discovered) Labels() labels.Labels {
	var b labels.ScratchBuilder
	d.Range(func(l labels.Label) { b.Add(l.Name, l.Value) })
	return b.Labels()
}

// Map returns the merged set as a map.
func (d Discovered) Map() map[string]string {
	m := make(map[string]string, len(d.Group)+len(d.Own))
	d.Range(func(l labels.Label) { m[l.Name] = l.Value })
	return m
}

// String formats the merged set as labels.Labels does.
func (d Discovered) String() string { return d.Labels().String() }

// Same reports whether both halves are equal label for label. It does not
// allocate; sets that merge to the same labels from different halves are not
// the Same, though Compare finds them equal.
func (d Discovered) Same(o Discovered) bool {
	return slices.Equal(d.Group, o.Group) && slices.Equal(d.Own, o.Own)
}

// Compare orders label sets as labels.Compare does.
func (d Discovered) Compare(o Discovered) int {
	var a, b []labels.Label
	d.Range(func(l labels.Label) { a = append(a, l) })
	o.Range(func(l labels.Label) { b = append(b, l) })
	return labels.Compare(labels.New(a...), labels.New(b...))
}
