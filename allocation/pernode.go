package allocation

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
