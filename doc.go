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
// ErrLockLost as soon as the loss of the lock is detected: by an extension
// that finds the token gone from a quorum, by a CheckTimes that does, or when
// its validity runs out without extension. Factory.Do runs a function under a
// lock with a context that is cancelled on loss.
//
// RLock is the reentrant variant: the holder may acquire it again, and only
// the last Release releases it on the nodes.
//
// # Factories
//
// Locks made by a Factory share its machinery: one auto-pipelined
// connection per node (WithPipelining), one subscriber per node that wakes
// blocked Acquire calls when their lock is released (WithWakeups), and one
// goroutine that extends all autoextending locks in batches, one script call
// per node. Close the factory to stop them. Locks made by NewLock borrow a
// pool connection per command, poll while blocked, and have an extender of
// their own that runs only while they are held.
//
// # Observing
//
// WithObserver hands acquisitions (attempts, time waited, outcome),
// releases, extensions, losses, node failures and blocked waiters to
// optional hooks; WithLogger logs them with slog. Without either, no event
// is built. The otel module (github.com/redlockplus/redlock/otel) turns
// the hooks into OpenTelemetry metrics and spans.
//
// # What it does not promise
//
// Redlock has no fencing token. A holder paused (GC, SIGSTOP, a VM freeze)
// beyond its validity may still act after another client acquired the lock;
// check Done before acting, and keep work well inside the validity. A node
// that restarts without persistence forgets its keys: keep a restarted node
// out for longer than the TTL, or run it with appendfsync always.
//
// # Errors
//
// Every error matches ErrRedlock. Callers branch on ErrNotAcquired,
// ErrLockLost, ErrNoQuorum, ErrInvalidOperation, ErrInvalidArgument and
// ErrClosed with errors.Is; *NodeError carries the failure of one node and
// *InsufficientNodesError a node list shorter than three. A cancelled
// Acquire matches both ErrNotAcquired and the context's error.
package redlock
