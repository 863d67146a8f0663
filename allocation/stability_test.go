package allocation

import (
	"fmt"
	"testing"
)

func TestStabilityTable(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	for _, T := range []int{10000, 100000} {
		for _, n := range []int{3, 10, 30, 100} {
			a := mustNew(t, Options{})
			a.SetJobTargets(makeTargets(T, 100, "s"))
			a.SetCollectors(makeCollectors(n))
			before := assignment(a.Snapshot())
			bal := a.Snapshot().Balance()
			r := a.SetCollectors(makeCollectors(n + 1))
			after := assignment(a.Snapshot())
			r2 := a.SetCollectors(makeCollectors(n))
			fmt.Printf("T=%d n=%d balance=%.4f join moved=%d min=%d ratio=%.3f (%d) leave moved=%d min=%d ratio=%.3f dur=%v\n", T, n, bal, r.Moved, T/(n+1), float64(r.Moved)/float64(T/(n+1)), moved(before, after), r2.Moved, r2.Min, float64(r2.Moved)/float64(r2.Min), r.Duration)
		}
	}
}
