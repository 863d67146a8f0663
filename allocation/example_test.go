package allocation_test

import (
	"fmt"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/shardwise/shardwise/allocation"
)

// An allocator assigns each target to one collector; a collector joining
// moves only what it must, and the snapshot readers hold never changes.
func ExampleAllocator() {
	a, err := allocation.New(allocation.Options{Strategy: allocation.ConsistentHashing})
	if err != nil {
		panic(err)
	}
	a.SetCollectors([]allocation.Collector{{Name: "collector-0"}, {Name: "collector-1"}})

	var targets []*allocation.Target
	for i := range 1000 {
		addr := fmt.Sprintf("10.0.%d.%d:9100", i/250, i%250)
		lbls := labels.FromStrings("__address__", addr)
		// Discovery computes the identity from the job and the relabeled labels.
		targets = append(targets, &allocation.Target{Job: "node", Hash: lbls.Hash(), Address: addr, Labels: allocation.DiscoveredOf(lbls)})
	}
	a.SetJobTargets(map[string][]*allocation.Target{"node": targets})
	before := a.Snapshot()

	res := a.SetCollectors([]allocation.Collector{{Name: "collector-0"}, {Name: "collector-1"}, {Name: "collector-2"}})
	after := a.Snapshot()

	fmt.Println("targets:", after.Targets(), "unassigned:", len(after.Unassigned()))
	fmt.Println("within the bound:", after.Balance() <= 1.05+0.005)
	fmt.Println("moved no more than 10% over the minimum:", float64(res.Moved) <= 1.1*float64(res.Min))
	fmt.Println("the old snapshot still has two collectors:", len(before.Collectors()))
	fmt.Println("collector-2 serves job node:", len(after.Slice("collector-2", "node").Targets) == after.Load("collector-2"))
	// Output:
	// targets: 1000 unassigned: 0
	// within the bound: true
	// moved no more than 10% over the minimum: true
	// the old snapshot still has two collectors: 2
	// collector-2 serves job node: true
}
