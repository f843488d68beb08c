// Package redlock is a distributed lock over three or more independent Redis
// nodes, using the Redlock algorithm. It is a Go port of the Python library
// redlock_plus, built on redigo.
//
// # Algorithm
//
// To acquire a lock, a client sends SET name token NX PX ttl to every node at
// once, with a fresh random token. The attempt succeeds when a quorum of
// nodes set the key and time is still left on the TTL:
//
//	drift    = ttl*DriftFactor + 2ms
//	validity = ttl - elapsed - drift
//
// where elapsed is measured on the monotonic clock from before the first SET
// to the reply that completed the quorum. The attempt returns as soon as its
// outcome is decided: it does not wait for a slow or dead node. A failed
// attempt deletes its key on every node that may have set it, including the
// ones whose answer comes late, and the next attempt starts after a random
// pause of up to the retry delay. Release, Extend and CheckTimes use Lua
// scripts that compare the token first, so a client never touches another
// holder's key.
//
// The quorum defaults to N/2+1 (2 of 3, 3 of 5), as in the Redis
// specification. redlock_plus uses max(3, N/2+1), which with three nodes
// needs all of them, so that a single node down stops every lock; use
// WithQuorum(3) for that behaviour.
//
// # Holding a lock
//
// A Lock is extended in the background at 3/4 of its validity by default
// (the autoextender). Its Done channel is closed and its Err returns
// ErrLockLost once the loss of the lock is detected: within a round trip of
// its keys being deleted, expired or overwritten on a quorum, for a
// Factory's lock with loss detection (WithLossDetection, on by default for
// pipelined *redis.Pool nodes); otherwise by an extension that finds the
// token gone from a quorum (about 3/4 of the validity after the last one:
// 90 s at the default TTL), by a CheckTimes that does, or when its validity
// runs out without extension. Factory.Do runs a function under a
// lock with a context that is cancelled on loss, and releases the lock when
// the function returns or panics.
//
// Release deletes the keys even when its context has already ended:
// releasing is cleanup, bounded by the node timeout, not by the caller's
// context.
//
// RLock is the reentrant variant: the holder may acquire it again, and only
// the last Release releases it on the nodes.
//
// # Coordination recipes
//
// A Factory also makes the primitives beyond the mutex, each with the
// same quorum, validity, autoextension, Done and Err on loss, context on
// every call, and pub/sub wake-ups of blocked acquirers (docs/SAFETY.md
// explains why each is safe):
//
//   - NewSemaphore: one of N permits, as one Redlock per permit slot;
//   - NewReadLock and NewWriteLock: shared readers, one writer; reader
//     leases expire on the nodes, and a waiting writer keeps new readers
//     out;
//   - NewMultiLock: several names together or none, set by one script per
//     node;
//   - NewElection: Campaign, Resign, Leader and Observe of one leader whose
//     key carries its value.
//
// Lock, RLock and all of them satisfy Locker; an Election's Acquire
// campaigns and its Release resigns.
//
// # Factories
//
// Locks made by a Factory share its machinery: one auto-pipelined
// connection per node (WithPipelining), one subscriber per node that wakes
// blocked Acquire calls when their lock is released (WithWakeups), one
// more per node that hears the changes of held locks' keys
// (WithLossDetection), one goroutine that extends all autoextending locks in batches, one script call
// per node, and one bounded queue per node for deletes that have to be
// retried. The factory owns every goroutine: Close refuses new work, ends
// in-flight and blocked Acquire calls with ErrClosed (they give up what they
// set), releases the locks still held, and waits for everything, in about
// two node timeouts at most. Locks made by NewLock get a private owner of
// the same kind: they borrow a pool connection per command, poll while
// blocked, and their background work ends by itself when idle.
//
// The nodes must be independent servers: a factory refuses, at its first
// operation, node URLs that name one server twice (by its run_id), since a
// quorum of them would be one machine. See docs/ARCHITECTURE.md for the
// design.
//
// # Fencing tokens
//
// With WithFencing(true) every holding gets a token (Lock.Fence, or
// FenceFrom inside Factory.Do) larger than that of every holding of the
// same name issued before it, for the protected resource to check: it
// refuses a request whose token is lower than one it has seen, so that a
// holder paused past its validity cannot act after the next holder did.
// The acquire script proposes the client's clock in microseconds as the
// token, and each node that grants the lock stores it as its fence when it
// is above the stored fence and close to the node's own clock: a quorum of
// such nodes issues it in the same round trip. Otherwise each node returns
// max(stored fence, server TIME in microseconds); the client takes the
// maximum over the quorum plus one and writes it back, in one more
// pipelined round, to every node that still holds the lock. The token
// counts once a quorum has it within the validity; otherwise the attempt
// fails with ErrFenceNotCommitted. The fence
// lives in the key name+FenceSuffix, without a TTL. docs/SAFETY.md proves
// the order and states its assumptions.
//
// # Other clients
//
// NewFactoryFromNodes takes Nodes of any client instead of redigo pools:
// the modules github.com/redlockplus/redlock/goredis and .../rueidis make
// them of go-redis and rueidis clients, and PoolNode of a redigo Pool. A
// Node runs one command or script at a time (Node), or a batch (Batcher);
// the locks, their scripts, keys and tokens are the same over every
// client, so a lock taken through one excludes the same name taken through
// another.
//
// # Observing
//
// WithObserver hands acquisitions (attempts, time waited, outcome),
// releases, extensions, losses, node failures and blocked waiters to
// optional hooks; WithLogger logs them with slog. Without either, no event
// is built. The otel module (github.com/redlockplus/redlock/otel) turns
// the hooks into OpenTelemetry metrics and spans.
//
// # The node guard
//
// A node that restarts without persistence forgets its keys, and one
// whose wall clock steps forward expires them early; either can hand a
// second client a quorum while a holder's validity lasts. The node guard,
// on by default, keeps such a node out of the vote: its yes does not count
// toward a quorum that makes or keeps a holding while its process has run
// for less than the restart window (WithRestartGuard, default the TTL) and
// it is not durable (appendonly yes, appendfsync always), or while its
// clock, read in the vote itself, is off this client's by more than the
// clock allowance (WithClockGuard). Such a yes fails with ErrNotVoting; a
// release still deletes there. A fresh node is a restarted one to the
// guard: it votes once it has run for the window. Factory.Health reports
// each node, and Observer.NodeVote and NodeRisk tell when a node leaves or
// rejoins the vote and when its maxmemory-policy can evict lock keys.
// docs/SAFETY.md proves the rules and states their assumptions.
//
// # What it does not promise
//
// Plain Redlock has no fencing token. A holder paused (GC, SIGSTOP, a VM
// freeze) beyond its validity may still act after another client acquired
// the lock; check Done before acting, keep work well inside the validity,
// or turn fencing on and have the resource check the token. A clock step
// that is undone before any vote reads it is beyond the node guard.
//
// # Errors
//
// Every error matches ErrRedlock, and its message is one line that starts
// with "redlock: " once. Callers branch on one sentinel per outcome with
// errors.Is:
//
//   - ErrNotAcquired: the lock was not acquired (another holder, no
//     quorum, attempts or context ran out); a cancelled Acquire also
//     matches the context's error.
//   - ErrLockLost: a held lock is no longer held (its keys vanished or its
//     validity ran out).
//   - ErrNoQuorum: too few nodes answered, so the outcome of an Extend,
//     Release or CheckTimes is unknown.
//   - ErrInvalidOperation: the call does not fit the lock's state, such
//     as Release before Acquire.
//   - ErrInvalidArgument: a name, option, URL or node list was refused.
//   - ErrClosed: the Factory was closed.
//   - ErrFenceNotCommitted: a fenced attempt's token did not reach a
//     quorum; it also matches ErrNotAcquired.
//   - ErrNoLeader: Election.Leader found no campaigner leading.
//   - ErrNodeBusy: a node that stopped answering had too many commands in
//     flight, so a command failed at once (in a *NodeError).
//   - ErrContested: an acquire attempt that another client's key refused
//     on a node stopped waiting for a node that had not answered (in a
//     *NodeError; it also matches context.DeadlineExceeded).
//   - ErrNotVoting: the node guard kept a node out of the vote (it
//     restarted recently without durable storage, or its clock is off);
//     it comes in a *NodeError and says which.
//   - ErrReplicaAck: a node's write was not acknowledged by the replicas
//     WithReplicaAck asks for, so its vote or release failed (a
//     *ReplicaAckError in a *NodeError).
//
// The detail is in typed errors, for errors.As: *NodeError is the failure
// of one node (it unwraps to the Redis or network error),
// *InsufficientNodesError a node list shorter than three (or a cluster with
// fewer than three masters), and *ReplicaAckError a WAIT that reported too
// few replicas.
package redlock
