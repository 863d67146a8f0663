package allocation

// Labels that name the node a target runs on, in the order NodeOf reads them.
const (
	labelPodNode             = "__meta_kubernetes_pod_node_name"
	labelNodeName            = "__meta_kubernetes_node_name"
	labelEndpointNode        = "__meta_kubernetes_endpoint_node_name"
	labelEndpointSliceKind   = "__meta_kubernetes_endpointslice_address_target_kind"
	labelEndpointSliceTarget = "__meta_kubernetes_endpointslice_address_target_name"
	labelEndpointSliceNode   = "__meta_kubernetes_endpointslice_endpoint_node_name"
)

// NodeOf returns the node a target runs on according to its discovered
// labels, "" when they do not say: the pod's node, the node itself (node role),
// the endpoint's node, an EndpointSlice address whose target is a Node, or
// the node an EndpointSlice endpoint names (one without a Pod behind it).
func NodeOf(lbls Discovered) string {
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

// perNode assigns each target to the collector on its node; when several
// collectors share the node, rendezvous scoring picks one. Targets with no
// node, or on a node without a collector, go to the fallback strategy, or stay
// unassigned when there is none.
func perNode(w *work, fallback string) []int32 {
	out := make([]int32, len(w.targets))
	onNode := map[string][]int32{}
	for i, c := range w.collectors {
		if c.Node != "" {
			onNode[c.Node] = append(onNode[c.Node], int32(i))
		}
	}
	var rest []int32
	for i, t := range w.targets {
		cs := onNode[t.Node]
		switch {
		case t.Node == "" || len(cs) == 0:
			out[i] = -1
			rest = append(rest, int32(i))
		case len(cs) == 1:
			out[i] = cs[0]
		default:
			top := none
			for _, c := range cs {
				if ch := (choice{score(t.Hash, w.seeds[c]), c}); top.idx < 0 || ch.better(top) {
					top = ch
				}
			}
			out[i] = top.idx
		}
	}
	var placed []int32
	switch fallback {
	case ConsistentHashing:
		placed = consistent(w, rest)
	case LeastWeighted:
		placed = leastWeighted(w, rest)
	default:
		return out
	}
	for _, i := range rest {
		out[i] = placed[i]
	}
	return out
}
