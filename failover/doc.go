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
// The library's factories use redigo pools, or go-redis or rueidis
// clients when REDLOCK_FAILOVER_CLIENT says so. A run over redigo ends
// with the scenarios where a client's own queueing, retries and
// reconnection meet the faults (minority faults, connection resets,
// fencing under faults) over each of the other two clients, on the same
// cluster (TestSafety/over_goredis, TestSafety/over_rueidis).
//
// TestClusterFailover runs on a Redis Cluster of its own, 3 masters with
// a replica each (one container per node on Docker, created by commands
// from the local image; redistest.StartRedisCluster's processes
// otherwise), with the masters as the nodes (redlock.ClusterNodes): 8
// clients of 4 factories with WithReplicaAck(1) contend with the
// lost-update witness while a master is killed and its replica promoted
// (no overlap, no lost update, acquisitions after the failover, the
// promoted replica holds every lock acquired with WithQuorum(3) before the
// kill); its negative control, without WithReplicaAck, holds back one
// replica's replication (paused, behind a write that fills the kernel's
// buffers) and finds the locks acquired meanwhile missing once that
// replica is promoted.
//
// Run it with
//
//	REDLOCKTEST_BACKEND=docker go test -race ./failover/
//
// and -short for a quicker subset. docs/SAFETY.md has the figures of a run.
package failover
