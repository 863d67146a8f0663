package allocation

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// Discovered is a target's discovered labels before relabeling: its group's
// labels merged with its own, its own winning on a name clash. Neither half is
// ever modified. Group is sorted by name and shared by every target of one
// target group; Own is the target's label set exactly as service discovery
// sent it (discovery never changes a group it has sent). So a target keeps no
// copy of its labels, where an encoded copy of ~40 Kubernetes meta labels
// costs about 2.5 KB.
type Discovered struct {
	Group []labels.Label
	Own   model.LabelSet
	// OwnNames, when set, are Own's names in order, shared by the targets
	// that have the same names (those of one group, usually), so reading the
	// merged set in order needs no sort.
	OwnNames []string
}

// DiscoveredOf wraps a complete label set, for callers without groups.
func DiscoveredOf(ls labels.Labels) Discovered {
	own := make(model.LabelSet, ls.Len())
	ls.Range(func(l labels.Label) { own[model.LabelName(l.Name)] = model.LabelValue(l.Value) })
	return Discovered{Own: own}
}

// Range calls f for each label of the merged set, in name order.
func (d Discovered) Range(f func(l labels.Label)) {
	var buf [64]labels.Label
	o := buf[:0]
	if len(d.OwnNames) == len(d.Own) {
		for _, n := range d.OwnNames {
			o = append(o, labels.Label{Name: n, Value: string(d.Own[model.LabelName(n)])})
		}
	} else {
		for n, v := range d.Own {
			o = append(o, labels.Label{Name: string(n), Value: string(v)})
		}
		slices.SortFunc(o, func(a, b labels.Label) int { return strings.Compare(a.Name, b.Name) })
	}
	g := d.Group
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
	if v, ok := d.Own[model.LabelName(name)]; ok {
		return string(v)
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

// Footprint returns an upper bound of the number of labels of the merged set
// and of the bytes of their names and values, without sorting: for sizing
// buffers.
func (d Discovered) Footprint() (n, bytes int) {
	for _, l := range d.Group {
		bytes += len(l.Name) + len(l.Value)
	}
	for k, v := range d.Own {
		bytes += len(k) + len(v)
	}
	return len(d.Group) + len(d.Own), bytes
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
	// As neither half is ever modified, the same memory holds the same
	// labels: a target of an unchanged group is recognised without reading
	// its labels.
	sameGroup := len(d.Group) == len(o.Group) && (len(d.Group) == 0 || &d.Group[0] == &o.Group[0])
	sameOwn := reflect.ValueOf(d.Own).UnsafePointer() == reflect.ValueOf(o.Own).UnsafePointer()
	return (sameGroup || slices.Equal(d.Group, o.Group)) && (sameOwn || maps.Equal(d.Own, o.Own))
}

// Compare orders label sets as labels.Compare does.
func (d Discovered) Compare(o Discovered) int {
	var a, b []labels.Label
	d.Range(func(l labels.Label) { a = append(a, l) })
	o.Range(func(l labels.Label) { b = append(b, l) })
	return labels.Compare(labels.New(a...), labels.New(b...))
}
