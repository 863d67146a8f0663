package relabel

import (
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/allocation"
)

func TestNodeOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lbls labels.Labels
		want string
	}{
		{labels.FromStrings("__meta_kubernetes_pod_node_name", "a"), "a"},
		{labels.FromStrings("__meta_kubernetes_node_name", "b"), "b"},
		{labels.FromStrings("__meta_kubernetes_endpoint_node_name", "c"), "c"},
		{labels.FromStrings("__meta_kubernetes_endpointslice_address_target_kind", "Node", "__meta_kubernetes_endpointslice_address_target_name", "d"), "d"},
		{labels.FromStrings("__meta_kubernetes_endpointslice_address_target_kind", "Pod", "__meta_kubernetes_endpointslice_address_target_name", "p"), ""},
		{labels.FromStrings("__meta_kubernetes_endpointslice_address_target_kind", "Pod", "__meta_kubernetes_endpointslice_endpoint_node_name", "e"), "e"},
		{labels.EmptyLabels(), ""},
	} {
		require.Equal(t, tc.want, nodeOf(allocation.DiscoveredOf(tc.lbls)), tc.lbls.String())
	}
}
