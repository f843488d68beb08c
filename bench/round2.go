package main

import (
	"fmt"
	"slices"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/benchkit"
)

// nodeCounts are the node counts of W8, the growth of the uncontended
// cycle with the number of nodes.
var nodeCounts = []int{3, 5, 7}

// nodeCountTargets are the targets of W8: this library (default options)
// and the floor on the first 3, 5 and 7 nodes, named redlock-3n,
// floor-3n... Measuring every node count as a target of one workload
// interleaves them in rounds, as the targets of any workload are.
func nodeCountTargets() []target {
	w8 := func(w benchkit.Workload) bool { return w.Goal() == "W8" }
	var ts []target
	for _, n := range nodeCounts {
		ours, floor := fmt.Sprintf("redlock-%dn", n), fmt.Sprintf("floor-%dn", n)
		ts = append(ts, target{
			name: ours,
			build: func(_ []string, ps []*redis.Pool, _ benchkit.Workload) (benchkit.Target, error) {
				if len(ps) < n {
					return nil, fmt.Errorf("bench: %s on %d nodes", ours, len(ps))
				}
				return benchkit.Ours(ours, lockPools(ps[:n]))
			},
			runs: w8,
		})
		ts = append(ts, target{
			name: floor,
			build: func(_ []string, ps []*redis.Pool, _ benchkit.Workload) (benchkit.Target, error) {
				if len(ps) < n {
					return nil, fmt.Errorf("bench: %s on %d nodes", floor, len(ps))
				}
				return benchkit.Floor(floor, lockPools(ps[:n]), false), nil
			},
			runs: w8,
		})
	}
	return ts
}

// onlyTargets names the only targets of the workloads of issue 15 whose
// goals are about this library alone, or against rueidislock: W7 keeps
// 100,000 locks with this library only, W8 compares node counts, W9
// compares loss detection with rueidislock's.
var onlyTargets = map[string][]string{
	"W7": {"redlock", "redlock-untracked"},
	"W8": {"redlock-3n", "redlock-5n", "redlock-7n", "floor-3n", "floor-5n", "floor-7n"},
	"W9": {"redlock", "rueidislock", "rueidislock-default"},
}

// excluded reports whether the workload w leaves the target name out.
func excluded(w benchkit.Workload, name string) bool {
	names, ok := onlyTargets[w.Goal()]
	return ok && !slices.Contains(names, name)
}

// lossDetectionTargets is this library without loss detection, beside the
// default redlock on W7, what loss detection costs the nodes per held lock
// (S2 of issue 23), and on W2, what it costs the client per cycle (E1,
// featureTargets).
func lossDetectionTargets() []target {
	runs := func(w benchkit.Workload) bool { return w.Goal() == "W7" || isW2(w) }
	return []target{
		{
			name: "redlock-untracked",
			build: func(_ []string, ps []*redis.Pool, _ benchkit.Workload) (benchkit.Target, error) {
				return benchkit.Ours("redlock-untracked", lockPools(ps), redlock.WithLossDetection(false))
			},
			runs: runs,
		},
	}
}
