// Package benchkit is the measuring side of the performance benchmarks of
// issue 5: the workloads W1..W6, the runners that drive a lock
// implementation through them, and what they record (latency percentiles,
// ops/s, allocations, overlaps, locks lost, CPU time, Redis commands).
//
// It depends only on redigo, the public API of package redlock and the
// standard library, so that both the bench tool (bench/, its own module,
// which adds redsync) and the redlock CLI can use it. It does not start
// Redis nodes: the caller supplies the pools.
//
// An implementation under test is a Target. Ours wraps a redlock.Factory,
// Floor is raw redigo doing the same commands with no lock logic (parallel
// SET NX PX on every node, then the release script), and any other library
// plugs in by implementing Target and Locker:
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
