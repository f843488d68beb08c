package redlock

import (
	"errors"
	"fmt"
)

// ErrRedlock is the root of every error this package returns:
// errors.Is(err, ErrRedlock) holds for all of them.
var ErrRedlock = errors.New("redlock: error")

// Sentinel errors, one per outcome a caller branches on. Each matches ErrRedlock.
var (
	// ErrNotAcquired: the lock could not be acquired, because another holder
	// has it, a quorum of nodes could not be reached, the attempts ran out, or
	// the context ended. A cancelled Acquire also matches ctx.Err().
	ErrNotAcquired error = &sentinel{"redlock: lock not acquired"}
	// ErrLockLost: the lock was held but is no longer: its keys are gone or
	// belong to another token on a quorum, or its validity ran out before it
	// could be extended.
	ErrLockLost error = &sentinel{"redlock: lock lost"}
	// ErrInvalidOperation: the call does not fit the lock's state, such as
	// Release before Acquire or a second Acquire on a held Lock.
	ErrInvalidOperation error = &sentinel{"redlock: invalid operation"}
	// ErrInvalidArgument: a name, option, URL or node list was rejected.
	ErrInvalidArgument error = &sentinel{"redlock: invalid argument"}
	// ErrNoQuorum: a quorum of nodes did not answer, so the outcome of an
	// Extend, Release or CheckTimes is unknown. The error lists the per-node
	// failures as *NodeError values.
	ErrNoQuorum error = &sentinel{"redlock: no quorum of nodes answered"}
	// ErrClosed: the Factory was closed.
	ErrClosed error = &sentinel{"redlock: factory closed"}
	// ErrNodeBusy: a node had too many commands in flight (it is slow or
	// hung), so the command failed at once instead of adding one more; it
	// comes wrapped in a *NodeError, and the other nodes decide the round.
	ErrNodeBusy error = &sentinel{"redlock: node busy"}
	// ErrNoLeader is returned by Election.Leader when no campaigner leads:
	// no token of the election's key is held by a quorum of nodes.
	ErrNoLeader error = &sentinel{"redlock: no leader"}
	// ErrFenceNotCommitted is the failure of a fenced attempt whose token
	// could not be written back to a quorum of nodes within the validity.
	// The attempt's keys are released; Acquire retries, TryAcquire counts
	// it as a failed attempt. It matches ErrNotAcquired and ErrRedlock.
	ErrFenceNotCommitted error = &notAcquiredSentinel{"redlock: fencing token not committed on a quorum"}
)

// sentinel is an error that matches ErrRedlock.
type sentinel struct{ msg string }

func (e *sentinel) Error() string        { return e.msg }
func (e *sentinel) Is(target error) bool { return target == ErrRedlock }

// notAcquiredSentinel is a sentinel that is also an ErrNotAcquired.
type notAcquiredSentinel struct{ msg string }

func (e *notAcquiredSentinel) Error() string { return e.msg }
func (e *notAcquiredSentinel) Is(target error) bool {
	return target == ErrRedlock || target == ErrNotAcquired
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
