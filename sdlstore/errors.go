package sdlstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pubsub"
)

// ErrSDL is the root of every error this package returns:
// errors.Is(err, ErrSDL) holds for all of them.
var ErrSDL = errors.New("sdlstore: error")

// Sentinel errors, one per outcome a caller branches on, mirroring the
// exceptions of ricsdl. Each matches ErrSDL. Errors from Redis or the network
// also unwrap to their cause, so errors.As finds a redis.Error and errors.Is
// finds context.DeadlineExceeded.
var (
	// ErrInvalidArgument: the call was rejected before anything was sent,
	// for an empty or illegal namespace, an empty key, group, channel or
	// resource name, nil data, no keys, an event containing "___", a nil
	// callback, or an invalid option.
	ErrInvalidArgument error = &kind{msg: "sdlstore: invalid argument"}
	// ErrRejectedByBackend: Redis answered with an error reply (for example
	// WRONGTYPE, READONLY or an unknown master), or the request does not fit
	// the current state, as ricsdl's RejectedByBackend.
	ErrRejectedByBackend error = &kind{msg: "sdlstore: rejected by backend"}
	// ErrNotConnected: the instance could not be reached, the connection
	// broke, or the context ended (timeouts included) before the reply.
	ErrNotConnected error = &kind{msg: "sdlstore: not connected to backend"}
	// ErrBackend: any other backend failure, such as a reply of an
	// unexpected type.
	ErrBackend error = &kind{msg: "sdlstore: backend failure"}
	// ErrClosed: the Store was closed.
	ErrClosed error = &kind{msg: "sdlstore: store closed"}
	// ErrLockNotHeld: Release, Refresh or ValidityTime on a Lock that is not
	// held: never acquired, released, expired, or taken over by another
	// owner. It also matches ErrRejectedByBackend, as in ricsdl.
	ErrLockNotHeld error = &kind{msg: "sdlstore: lock not held", parent: ErrRejectedByBackend}
	// ErrSubscribeUnsupported: SubscribeChannel, on a Store made by
	// NewFromNodes, for a namespace whose instance's node is not a
	// redlock.PubSubNode: it carries commands but cannot open a
	// subscriber connection. It also matches ErrInvalidArgument: nothing
	// was sent.
	ErrSubscribeUnsupported error = &kind{msg: "sdlstore: subscribing needs a pool or a redlock.PubSubNode", parent: ErrInvalidArgument}
)

// kind is a sentinel error that matches ErrSDL and, optionally, a parent.
type kind struct {
	msg    string
	parent error
}

func (k *kind) Error() string { return k.msg }

func (k *kind) Is(target error) bool {
	return target == ErrSDL || (k.parent != nil && target == k.parent)
}

// invalidArg returns an ErrInvalidArgument with detail.
func invalidArg(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// rejected returns an ErrRejectedByBackend with detail.
func rejected(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRejectedByBackend, fmt.Sprintf(format, args...))
}

// backendErr maps an error from redigo (or a pool) for operation op onto
// the sentinels above and keeps it as the cause. Errors already from this
// package are returned as they are.
func backendErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrSDL) {
		return err
	}
	return fmt.Errorf("%w: %s: %w", classify(err), op, err)
}

// classify picks the sentinel for a redigo, pool, node or network error.
func classify(err error) error {
	var re redis.Error
	var ne net.Error
	var errno syscall.Errno
	var ue unreachableError
	switch {
	case errors.As(err, &re):
		return ErrRejectedByBackend
	case errors.As(err, &ue), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, redis.ErrPoolExhausted), errors.Is(err, errNoMaster),
		errors.Is(err, pubsub.ErrDisconnected), errors.Is(err, pubsub.ErrHealthCheck),
		errors.As(err, &ne), errors.As(err, &errno):
		return ErrNotConnected
	}
	// redigo keeps these unexported.
	msg := err.Error()
	if strings.Contains(msg, "redigo: connection closed") || strings.Contains(msg, "redigo: get on closed pool") {
		return ErrNotConnected
	}
	return ErrBackend
}

// isConnectionFault reports whether err means the instance's connection or
// role is wrong (so a sentinel pool should look for the master again), as
// opposed to a caller's context ending or a plain error reply.
func isConnectionFault(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var re redis.Error
	if errors.As(err, &re) {
		s := string(re)
		return strings.HasPrefix(s, "READONLY") || strings.HasPrefix(s, "MASTERDOWN") || strings.HasPrefix(s, "LOADING")
	}
	return errors.Is(classify(err), ErrNotConnected)
}

// errUnexpectedReply is the cause of an ErrBackend for a malformed reply.
var errUnexpectedReply = errors.New("sdlstore: unexpected reply from Redis")
