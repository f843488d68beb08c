package redlock

import (
	"context"

	"github.com/redlockplus/redlock/internal/pubsub"
)

// PubSubNode is a Node that can also open a pub/sub connection of its own,
// so that the blocked Acquire calls of a factory made by
// NewFactoryFromNodes are woken by the release of their lock instead of
// polling (WithWakeups). The modules goredis and rueidis implement it. The
// factory opens one connection per such node when an Acquire first waits,
// subscribes it to the release channels of the names that have waiters,
// PINGs it every second, opens a new one when it fails or stops answering,
// and closes it in Close. A factory whose nodes are not PubSubNodes (nor
// PoolNodes of a *redis.Pool) polls.
type PubSubNode interface {
	Node
	// PubSub opens a new connection to the node's server for pub/sub
	// only, owned by the caller until it closes it. ctx bounds the dial
	// (the node timeout, at least 250 ms). When the connection fails,
	// its Receive must return an error (even if the client dials again by
	// itself): the factory then opens another and subscribes it anew.
	PubSub(ctx context.Context) (PubSubConn, error)
}

// PubSubConn is one connection opened by PubSubNode.PubSub. The factory
// calls Receive from one goroutine and Subscribe, Unsubscribe and Ping
// from another; it calls Close once it is done, or to stop a Receive
// (which must then return), from any goroutine.
type PubSubConn interface {
	// Subscribe sends SUBSCRIBE for channels. It need not wait for the
	// server's confirmations, one per channel: Receive returns them.
	Subscribe(ctx context.Context, channels ...string) error
	// Unsubscribe sends UNSUBSCRIBE for channels; Receive returns the
	// confirmations, like Subscribe's.
	Unsubscribe(ctx context.Context, channels ...string) error
	// Ping sends PING, for the health check: Receive returns its answer,
	// after the replies to the commands sent before it.
	Ping(ctx context.Context) error
	// Receive waits for the next reply and returns it, in the order the
	// server sent them. It returns an error once the connection failed or
	// was closed, or when ctx ends.
	Receive(ctx context.Context) (PubSubReply, error)
	// Close closes the connection.
	Close() error
}

// PubSubReply is one reply received on a PubSubConn, a struct of three
// fields:
//
//   - Kind string: the reply's kind as Redis names it: "message" for a
//     message, "subscribe" and "unsubscribe" for the confirmation of one
//     channel, "pong" for the answer to PING. Replies of the pattern
//     commands ("pmessage", "psubscribe", "punsubscribe") are ignored; any
//     other kind makes the factory drop the connection and open another.
//   - Channel string: the channel of a message or a confirmation.
//   - Data []byte: the payload of a message.
//
// It is the subscriber's own reply type, so that a PubSubConn is handed to
// the subscribers of the factory and of sdlstore as it is, without a
// wrapper.
type PubSubReply = pubsub.Reply

// openerOf returns the function that opens n's pub/sub connections for a
// subscriber (internal/pubsub's Config.Open).
func openerOf(n PubSubNode) func(ctx context.Context) (pubsub.Conn, error) {
	return func(ctx context.Context) (pubsub.Conn, error) { return n.PubSub(ctx) }
}
