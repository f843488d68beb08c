package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// prefix starts every message of this package, once.
const prefix = "redlock: "

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

// ErrNodeBusy: a node that has stopped answering has too many commands in
// flight, so a command failed at once instead of adding one more; it comes
// in a *NodeError, and the other nodes decide the round.
var ErrNodeBusy = newSentinel("redlock: node busy")

// ErrContested: a node had not answered an acquire attempt when the
// attempt gave up on it, because another client's key had made another
// node refuse the attempt, so that only this node's yes could still make
// the quorum. A contested attempt waits for such nodes about as long
// again as the refusal took to come, not the node timeout, so that it
// does not keep its keys on the nodes that granted it while a minority is
// silent (docs/SAFETY.md, "Attempts decide at quorum"). It comes in a
// *NodeError, and also matches context.DeadlineExceeded: the node did not
// answer within the attempt's wait.
var ErrContested = newSentinel("redlock: no reply before a contested attempt gave up", context.DeadlineExceeded)

// ErrNotVoting: a node's yes was not counted, because the node guard keeps
// the node out of the vote: it restarted less than the restart window ago
// without durable storage, or its clock is off this client's by more than
// the clock guard's allowance. It comes in a *NodeError whose message says
// which, and the other nodes decide the round.
var ErrNotVoting = newSentinel("redlock: node not voting")

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
	return fmt.Sprintf("redlock: node %d (%s): %s", e.Node, e.Addr, detailOf(e.Err))
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

// detailOf is err's message as a part of another message of this package:
// on one line, and without the package prefix, which the whole message
// has once.
func detailOf(err error) string { return strings.TrimPrefix(oneLine(err), prefix) }

// oneLine is err's message with its line breaks (errors.Join's) turned
// into "; ".
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// wrapf is fmt.Errorf for the messages of this package: the message is
// one line with one package prefix, every error argument shown by
// detailOf, and the %w arguments are unwrapped as fmt.Errorf's are, for
// errors.Is and errors.As.
func wrapf(format string, args ...any) error {
	shown := make([]any, len(args))
	for i, a := range args {
		if err, ok := a.(error); ok && err != nil {
			a = detailOf(err)
		}
		shown[i] = a
	}
	msg := prefix + strings.TrimPrefix(fmt.Sprintf(strings.ReplaceAll(format, "%w", "%v"), shown...), prefix)
	return &messageError{msg: msg, wrapped: fmt.Errorf(format, args...)}
}

// messageError is an error whose message is msg and whose chain is that
// of wrapped, an error fmt.Errorf made from the same arguments.
type messageError struct {
	msg     string
	wrapped error
}

func (e *messageError) Error() string { return e.msg }

// Unwrap returns the errors that wrapped wraps.
func (e *messageError) Unwrap() []error {
	switch u := e.wrapped.(type) {
	case interface{ Unwrap() []error }:
		return u.Unwrap()
	case interface{ Unwrap() error }:
		if w := u.Unwrap(); w != nil {
			return []error{w}
		}
	}
	return nil
}

// joinErrors is errors.Join on one line: "redlock: A; B", each part shown
// by detailOf. It returns nil when every error is nil and the error itself
// when only one is not; Unwrap returns the errors that are not nil.
func joinErrors(errs ...error) error {
	var kept []error
	for _, err := range errs {
		if err != nil {
			kept = append(kept, err)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	return &joinedError{errs: kept}
}

// joinedError is what joinErrors returns for two errors or more.
type joinedError struct{ errs []error }

func (e *joinedError) Error() string {
	parts := make([]string, len(e.errs))
	for i, err := range e.errs {
		parts[i] = detailOf(err)
	}
	return prefix + strings.Join(parts, "; ")
}

// Unwrap returns the joined errors.
func (e *joinedError) Unwrap() []error { return e.errs }
