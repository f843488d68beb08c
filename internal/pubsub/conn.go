package pubsub

import (
	"context"
	"fmt"

	"github.com/gomodule/redigo/redis"
)

// Conn is a pub/sub connection of another Redis client, for Config.Open:
// the form in which package redlock hands the Subscriber a connection of a
// redlock.PubSubNode. The Subscriber calls Receive from one goroutine and
// Subscribe, Unsubscribe and Ping from another, and Close from either or a
// third; Close must make a blocked Receive return.
type Conn interface {
	// Subscribe sends SUBSCRIBE for channels; Receive returns the
	// server's confirmations.
	Subscribe(ctx context.Context, channels ...string) error
	// Unsubscribe sends UNSUBSCRIBE for channels; Receive returns the
	// server's confirmations.
	Unsubscribe(ctx context.Context, channels ...string) error
	// Ping sends PING; Receive returns its answer after the replies to the
	// commands sent before it.
	Ping(ctx context.Context) error
	// Receive returns the next reply, in the order the server sent them.
	Receive(ctx context.Context) (Reply, error)
	// Close closes the connection.
	Close() error
}

// Reply is one reply that a Conn received.
type Reply struct {
	// Kind is the reply's kind as Redis names it: "message", "subscribe",
	// "unsubscribe" or "pong" ("pmessage", "psubscribe" and "punsubscribe"
	// are ignored; any other kind ends the connection).
	Kind string
	// Channel is the channel of a message or a confirmation.
	Channel string
	// Data is a message's payload.
	Data []byte
}

// wire is a connection as a session drives it: a redigo connection
// (Config.Dial) or a Conn (Config.Open). It is the one seam between the
// Subscriber and the client that carries its commands.
type wire interface {
	// send writes UNSUBSCRIBE for unsubs, then SUBSCRIBE for subs, then
	// PING if ping, each only when asked for.
	send(ctx context.Context, subs, unsubs []any, ping bool) error
	// receive returns the next reply; it returns when ctx ends.
	receive(ctx context.Context) (push, error)
	close()
}

// redigoWire is a redigo connection: the commands of one send go out in
// one flush.
type redigoWire struct{ conn redis.Conn }

func (w redigoWire) send(_ context.Context, subs, unsubs []any, ping bool) error {
	if len(subs) == 0 && len(unsubs) == 0 && !ping {
		return nil
	}
	var err error
	if len(unsubs) > 0 {
		err = w.conn.Send("UNSUBSCRIBE", unsubs...)
	}
	if len(subs) > 0 && err == nil {
		err = w.conn.Send("SUBSCRIBE", subs...)
	}
	if ping && err == nil {
		err = w.conn.Send("PING")
	}
	if err != nil {
		return err
	}
	return w.conn.Flush()
}

// receive reads with ReceiveContext, which closes the socket when ctx ends.
func (w redigoWire) receive(ctx context.Context) (push, error) {
	v, err := redis.ReceiveContext(w.conn, ctx)
	if err != nil {
		return push{}, err
	}
	return parsePush(v)
}

func (w redigoWire) close() { w.conn.Close() }

// connWire is a Conn of another client.
type connWire struct{ conn Conn }

func (w connWire) send(ctx context.Context, subs, unsubs []any, ping bool) error {
	if len(unsubs) > 0 {
		if err := w.conn.Unsubscribe(ctx, channelNames(unsubs)...); err != nil {
			return err
		}
	}
	if len(subs) > 0 {
		if err := w.conn.Subscribe(ctx, channelNames(subs)...); err != nil {
			return err
		}
	}
	if ping {
		return w.conn.Ping(ctx)
	}
	return nil
}

// receive closes the connection when ctx ends, so that a client whose
// Receive heeds only deadlines returns too; it returns after that Close,
// so that nothing of the session outlives it.
func (w connWire) receive(ctx context.Context) (push, error) {
	closed := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(closed)
		w.conn.Close()
	})
	r, err := w.conn.Receive(ctx)
	if !stop() {
		<-closed
	}
	if err != nil {
		return push{}, err
	}
	switch r.Kind {
	case "message":
		return push{kind: kindMessage, channel: r.Channel, data: r.Data}, nil
	case "subscribe", "unsubscribe":
		return push{kind: kindSubscription, channel: r.Channel}, nil
	case "pong":
		return push{kind: kindPong}, nil
	case "pmessage", "psubscribe", "punsubscribe":
		return push{kind: kindOther}, nil
	}
	return push{}, fmt.Errorf("%w: %q", ErrUnexpectedReply, r.Kind)
}

func (w connWire) close() { w.conn.Close() }

// channelNames returns the channel names that the set hands out as []any.
func channelNames(names []any) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n.(string)
	}
	return out
}
