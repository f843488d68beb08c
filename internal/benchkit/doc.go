// Package benchkit is the measuring side of the performance benchmarks of
// issues 5 and 15: the workloads W1..W9, the runners that drive a lock
// implementation through them, and what they record (latency percentiles,
// ops/s, allocations, overlaps, locks lost, CPU time, heap per held lock,
// Redis commands, and how soon a holder notices that its lock was lost).
//
// It depends only on redigo, the public API of package redlock and the
// standard library, so that both the bench tool (bench/, its own module,
// which adds redsync) and the redlock CLI can use it. It does not start
// Redis nodes: the caller supplies the pools.
//
// An implementation under test is a Target. Ours wraps a redlock.Factory,
// Floor is raw redigo doing the same commands with no lock logic (parallel
// SET NX PX on every node, then the release script), and any other library
// plugs in by implementing Target and Locker (KeepTarget and Keeper for the
// Keep workloads W6 and W7, WatchTarget and Watcher for the Detect workload
// W9, which also needs raw pools of the nodes in Workload.Nodes):
//
//	ours, err := benchkit.Ours("redlock", pools)
//	...
//	defer ours.Close()
//	for _, w := range benchkit.Standard(false) {
//		if w.NodeCount != len(pools) || w.SlowNode {
//			continue // the caller supplies the right nodes per workload
//		}
//		res, err := benchkit.Run(ctx, ours, w)
//		...
//		fmt.Println(res.Workload, res.OpsPerSec, res.Cycle.P50)
//	}
//
// Run measures one target on one workload. Runs of several targets can be
// interleaved in rounds and combined with Merge, which keeps the ratios
// between targets fair on a noisy machine.
package benchkit
