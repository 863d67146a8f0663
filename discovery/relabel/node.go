package relabel

import "github.com/shardwise/shardwise/allocation"

// Kubernetes service-discovery labels that name the node a target runs on, in
// the order nodeOf reads them.
const (
	labelPodNode             = "__meta_kubernetes_pod_node_name"
	labelNodeName            = "__meta_kubernetes_node_name"
	labelEndpointNode        = "__meta_kubernetes_endpoint_node_name"
	labelEndpointSliceKind   = "__meta_kubernetes_endpointslice_address_target_kind"
	labelEndpointSliceTarget = "__meta_kubernetes_endpointslice_address_target_name"
	labelEndpointSliceNode   = "__meta_kubernetes_endpointslice_endpoint_node_name"
)

// nodeOf returns the node a target runs on according to its discovered
// labels, "" when they do not say: the pod's node, the node itself (node role),
// the endpoint's node, an EndpointSlice address whose target is a Node, or
// the node an EndpointSlice endpoint names (one without a Pod behind it). It
// fills allocation.Target.Node, which the per-node strategy reads.
func nodeOf(lbls allocation.Discovered) string {
	for _, name := range []string{labelPodNode, labelNodeName, labelEndpointNode} {
		if v := lbls.Get(name); v != "" {
			return v
		}
	}
	if lbls.Get(labelEndpointSliceKind) == "Node" {
		return lbls.Get(labelEndpointSliceTarget)
	}
	return lbls.Get(labelEndpointSliceNode)
}
