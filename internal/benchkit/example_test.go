package benchkit_test

import (
	"context"
	"fmt"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/benchkit"
)

// Measure this library against the floor on the uncontended workloads.
// The pools are three Redis nodes the caller started.
func ExampleRun() {
	var pools []redlock.Pool // three nodes, for example from redlock.NewPool
	ctx := context.Background()
	ours, err := benchkit.Ours("redlock", pools)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ours.Close()
	floor := benchkit.Floor("floor", pools, false)
	defer floor.Close()
	for _, w := range benchkit.Standard(true) {
		if w.NodeCount != len(pools) || w.SlowNode || w.Kind != benchkit.Cycle {
			continue
		}
		a, _ := benchkit.Run(ctx, ours, w)
		b, _ := benchkit.Run(ctx, floor, w)
		fmt.Printf("%s: p50 %v vs floor %v\n", w.ID, a.Cycle.P50, b.Cycle.P50)
	}
}
