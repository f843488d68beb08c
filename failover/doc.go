// Package failover holds the Jepsen-style safety suite of the redlock
// module; it has no API. Its tests run contending clients against five real
// Redis nodes started by redlocktest (Docker containers in CI), inject
// faults (kills, pauses, partitions, restarts without persistence, slow
// nodes, lost replies, a crashed holder, a node's clock stepped; the node
// guard keeps restarted and stepped nodes out of the vote, and its
// negative controls turn it off), and check every history with one
// monotonic clock: the validity intervals of different holders of a lock
// never overlap, a counter guarded by the lock loses no update, and failed
// attempts leave no keys behind. With fencing on, tokens grow in
// acquisition order and a store that refuses stale tokens loses no update,
// even when holders pause past their validity. Deliberately broken Redlock
// and fencing variants, built inside the tests, show that the checks catch
// what they must.
//
// Run it with
//
//	REDLOCKTEST_BACKEND=docker go test -race ./failover/
//
// and -short for a quicker subset. docs/SAFETY.md has the figures of a run.
package failover
