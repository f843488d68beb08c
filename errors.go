package redlock

import (
	"errors"
	"fmt"
)

// ErrRedlock is the root of every error this package returns:
// errors.Is(err, ErrRedlock) holds for all of them.
var ErrRedlock = errors.New("redlock: error")

// The sentinel errors follow, one per outcome a caller branches on with
// errors.Is. Each matches ErrRedlock; the package overview lists them.

// ErrNotAcquired: the lock could not be acquired, because another holder
// has it, a quorum of nodes could not be reached, the attempts ran out, or
// the context ended. A cancelled Acquire also matches ctx.Err().
var ErrNotAcquired = newSentinel("redlock: lock not acquired")

// ErrLockLost: the lock was held but is no longer: its keys are gone or
// belong to another token on a quorum, or its validity ran out before it
// could be extended.
var ErrLockLost = newSentinel("redlock: lock lost")

// ErrInvalidOperation: the call does not fit the lock's state, such as
// Release before Acquire or a second Acquire on a held Lock.
var ErrInvalidOperation = newSentinel("redlock: invalid operation")

// ErrInvalidArgument: a name, option, URL or node list was rejected.
var ErrInvalidArgument = newSentinel("redlock: invalid argument")

// ErrNoQuorum: a quorum of nodes did not answer, so the outcome of an
// Extend, Release or CheckTimes is unknown. The error lists the per-node
// failures as *NodeError values.
var ErrNoQuorum = newSentinel("redlock: no quorum of nodes answered")

// ErrClosed: the Factory was closed.
var ErrClosed = newSentinel("redlock: factory closed")

// ErrFenceNotCommitted: a fenced attempt's token could not be written back
// to a quorum of nodes within the validity. The attempt's keys are
// released; Acquire retries, TryAcquire counts it as a failed attempt. It
// also matches ErrNotAcquired.
var ErrFenceNotCommitted = newSentinel("redlock: fencing token not committed on a quorum", ErrNotAcquired)

// ErrNoLeader: Election.Leader found no campaigner leading: no token of
// the election's key is held by a quorum of nodes.
var ErrNoLeader = newSentinel("redlock: no leader")

// sentinel is an error that matches ErrRedlock, and also when set.
type sentinel struct {
	msg  string
	also error
}

// newSentinel returns a sentinel error with the message msg that also
// matches also, when given.
func newSentinel(msg string, also ...error) error {
	e := &sentinel{msg: msg}
	if len(also) > 0 {
		e.also = also[0]
	}
	return e
}

func (e *sentinel) Error() string { return e.msg }
func (e *sentinel) Is(target error) bool {
	return target == ErrRedlock || e.also != nil && target == e.also
}

// InsufficientNodesError reports a node list shorter than the three nodes
// Redlock needs. It matches ErrRedlock and ErrInvalidArgument.
type InsufficientNodesError struct {
	NodeCount int
}

func (e *InsufficientNodesError) Error() string {
	return fmt.Sprintf("redlock: at least 3 nodes are needed, got %d", e.NodeCount)
}

// Is makes the error match ErrRedlock and ErrInvalidArgument.
func (e *InsufficientNodesError) Is(target error) bool {
	return target == ErrRedlock || target == ErrInvalidArgument
}

// NodeError is the failure of one node during a quorum operation. Node is the
// index in the node list, Addr its address when known. It unwraps to the
// underlying Redis or network error and also matches ErrRedlock.
type NodeError struct {
	Node int
	Addr string
	Err  error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("redlock: node %d (%s): %v", e.Node, e.Addr, e.Err)
}

// Unwrap returns the underlying error.
func (e *NodeError) Unwrap() error { return e.Err }

// Is makes the error match ErrRedlock.
func (e *NodeError) Is(target error) bool { return target == ErrRedlock }

// invalidArg builds an ErrInvalidArgument with detail.
func invalidArg(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// invalidOp builds an ErrInvalidOperation with detail.
func invalidOp(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidOperation, fmt.Sprintf(format, args...))
}
