package redlockrueidis

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/rueidis"

	"github.com/redlockplus/redlock"
)

var _ redlock.PubSubNode = node{}

// errPubSubClosed is the error of Receive on a connection that ended
// without a cause.
var errPubSubClosed = errors.New("redlockrueidis: pub/sub connection closed")

// PubSub opens a dedicated connection of the client (Dedicate), receives
// its pub/sub replies through hooks, and checks it with a PING.
func (n node) PubSub(ctx context.Context) (redlock.PubSubConn, error) {
	dc, _ := n.c.Dedicate() // dc.Close releases it
	c := &pubsubConn{dc: dc, more: make(chan struct{}, 1)}
	c.ended = dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage: func(m rueidis.PubSubMessage) {
			kind := "message"
			if m.Pattern != "" {
				kind = "pmessage"
			}
			c.push(redlock.PubSubReply{Kind: kind, Channel: m.Channel, Data: []byte(m.Message)})
		},
		OnSubscription: func(s rueidis.PubSubSubscription) {
			c.push(redlock.PubSubReply{Kind: s.Kind, Channel: s.Channel})
		},
	})
	if err := dc.Do(ctx, dc.B().Ping().Build()).Error(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// pubsubConn is a dedicated rueidis connection as a redlock.PubSubConn.
// The hooks run in rueidis's reader goroutine, which must never block:
// they queue the replies, and Receive takes them from the queue.
type pubsubConn struct {
	dc    rueidis.DedicatedClient
	ended <-chan error  // gets the cause and closes when the connection ends
	more  chan struct{} // the queue grew

	mu    sync.Mutex
	queue []redlock.PubSubReply
}

// push queues a reply for Receive.
func (c *pubsubConn) push(r redlock.PubSubReply) {
	c.mu.Lock()
	c.queue = append(c.queue, r)
	c.mu.Unlock()
	select {
	case c.more <- struct{}{}:
	default:
	}
}

// Subscribe sends SUBSCRIBE; rueidis returns once the server confirmed the
// first channel, and the hook queues every confirmation.
func (c *pubsubConn) Subscribe(ctx context.Context, channels ...string) error {
	return c.dc.Do(ctx, c.dc.B().Subscribe().Channel(channels...).Build()).Error()
}

func (c *pubsubConn) Unsubscribe(ctx context.Context, channels ...string) error {
	return c.dc.Do(ctx, c.dc.B().Unsubscribe().Channel(channels...).Build()).Error()
}

// Ping sends PING and queues its answer once it came: the hooks have
// queued the replies the server sent before it.
func (c *pubsubConn) Ping(ctx context.Context) error {
	if err := c.dc.Do(ctx, c.dc.B().Ping().Build()).Error(); err != nil {
		return err
	}
	c.push(redlock.PubSubReply{Kind: "pong"})
	return nil
}

func (c *pubsubConn) Receive(ctx context.Context) (redlock.PubSubReply, error) {
	for {
		c.mu.Lock()
		if len(c.queue) > 0 {
			r := c.queue[0]
			c.queue = c.queue[1:]
			c.mu.Unlock()
			return r, nil
		}
		c.mu.Unlock()
		select {
		case <-c.more:
		case err := <-c.ended:
			if err == nil {
				err = errPubSubClosed
			}
			return redlock.PubSubReply{}, err
		case <-ctx.Done():
			return redlock.PubSubReply{}, ctx.Err()
		}
	}
}

// Close closes the connection and gives it back to the client, which drops
// it.
func (c *pubsubConn) Close() error {
	c.dc.Close()
	return nil
}
