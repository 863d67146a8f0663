package allocation

import (
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

func TestDiscoveredMergesOwnOverGroup(t *testing.T) {
	t.Parallel()
	d := Discovered{
		Group: []labels.Label{{Name: "a", Value: "g"}, {Name: "c", Value: "g"}, {Name: "e", Value: "g"}},
		Own:   model.LabelSet{"b": "o", "c": "o", "f": "o"},
	}
	want := labels.FromStrings("a", "g", "b", "o", "c", "o", "e", "g", "f", "o")
	require.True(t, labels.Equal(want, d.Labels()), d.String())
	require.Equal(t, want.Map(), d.Map())
	require.Equal(t, 5, d.Len())
	require.Equal(t, "o", d.Get("c"))
	require.Equal(t, "g", d.Get("e"))
	require.Empty(t, d.Get("z"))

	flat := DiscoveredOf(want)
	require.Zero(t, d.Compare(flat), "same labels from different halves compare equal")
	require.False(t, d.Same(flat), "but are not the Same")
	require.True(t, d.Same(Discovered{Group: d.Group, Own: d.Own.Clone()}))
	require.Positive(t, DiscoveredOf(labels.FromStrings("a", "h")).Compare(DiscoveredOf(labels.FromStrings("a", "g"))))
}

func TestDiscoveredFootprintBoundsTheMergedSet(t *testing.T) {
	t.Parallel()
	d := Discovered{Group: []labels.Label{{Name: "a", Value: "1"}, {Name: "b", Value: "22"}}, Own: model.LabelSet{"b": "3", "cc": "4"}}
	n, bytes := d.Footprint()
	require.GreaterOrEqual(t, n, d.Len())
	merged := 0
	d.Range(func(l labels.Label) { merged += len(l.Name) + len(l.Value) })
	require.GreaterOrEqual(t, bytes, merged)
}

func TestDiscoveredOwnNamesGiveTheSameOrder(t *testing.T) {
	t.Parallel()
	own := model.LabelSet{"z": "1", "b": "2", "m": "3"}
	group := []labels.Label{{Name: "a", Value: "g"}, {Name: "m", Value: "g"}}
	sorted := Discovered{Group: group, Own: own}
	named := Discovered{Group: group, Own: own, OwnNames: []string{"b", "m", "z"}}
	require.True(t, labels.Equal(sorted.Labels(), named.Labels()))
	require.Equal(t, `{a="g", b="2", m="3", z="1"}`, named.String())
	require.True(t, sorted.Same(named), "OwnNames is an index, not content")
}
