package pubsub

import "errors"

// Sentinel errors, one per outcome a caller branches on.
var (
	// ErrClosed: the Subscriber was closed, or its Spawn refused to start it.
	ErrClosed = errors.New("pubsub: subscriber closed")
	// ErrDisconnected: the connection failed, or could not be made, before
	// Redis confirmed a subscription a WaitConfirmed was waiting for. The
	// channels stay in the set and are subscribed again on the next
	// connection. The error also unwraps to the cause.
	ErrDisconnected = errors.New("pubsub: not connected")
	// ErrNotSubscribed: WaitConfirmed was asked about a channel that is not
	// in the set, or that was unsubscribed while it waited.
	ErrNotSubscribed = errors.New("pubsub: channel not subscribed")
	// ErrHealthCheck: the connection answered nothing, not even PING, for
	// two health-check intervals, and was dropped. It is the cause passed to
	// OnDisconnect and wrapped by ErrDisconnected.
	ErrHealthCheck = errors.New("pubsub: connection did not answer the health check")
	// ErrInvalidConfig: New was given a Config it cannot run with.
	ErrInvalidConfig = errors.New("pubsub: invalid config")
	// ErrUnexpectedReply: the server sent a reply that is not a pub/sub
	// message; the connection is dropped and dialled again.
	ErrUnexpectedReply = errors.New("pubsub: unexpected reply")
)
