package redlockgoredis

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redlockplus/redlock"
)

// subNode is a node whose client can subscribe: a redlock.PubSubNode, so
// that the factory's blocked Acquire calls are woken by releases.
type subNode struct{ node }

var _ redlock.PubSubNode = subNode{}

// nodeOf returns c's node: a subNode unless c is a *redis.Ring, which
// subscribes on the shard of the channel's name while a release publishes
// on the shard of the lock's key, so that its waiters poll, or a
// *redis.ClusterClient, which Nodes refuses (wholeCluster).
func nodeOf(c redis.UniversalClient) redlock.Node {
	switch c := c.(type) {
	case *redis.Ring:
		return node{c}
	case *redis.ClusterClient:
		return wholeCluster{c}
	}
	return subNode{node{c}}
}

// PubSub opens a go-redis PubSub of the client and checks it with a PING,
// whose answer it reads before it returns the connection.
func (n subNode) PubSub(ctx context.Context) (redlock.PubSubConn, error) {
	ps := n.c.Subscribe(ctx)
	err := ps.Ping(ctx)
	if err == nil {
		var v any
		if v, err = ps.Receive(ctx); err == nil {
			if _, ok := v.(*redis.Pong); !ok {
				err = fmt.Errorf("redlockgoredis: PING on a new pub/sub connection answered %v", v)
			}
		}
	}
	if err != nil {
		ps.Close()
		return nil, err
	}
	return pubsubConn{ps}, nil
}

// pubsubConn is a go-redis PubSub as a redlock.PubSubConn. go-redis dials
// again by itself after an error, but still returns the error, which ends
// the connection for the factory: it closes the PubSub and opens another.
type pubsubConn struct{ ps *redis.PubSub }

func (c pubsubConn) Subscribe(ctx context.Context, channels ...string) error {
	return c.ps.Subscribe(ctx, channels...)
}

func (c pubsubConn) Unsubscribe(ctx context.Context, channels ...string) error {
	return c.ps.Unsubscribe(ctx, channels...)
}

func (c pubsubConn) Ping(ctx context.Context) error { return c.ps.Ping(ctx) }

// Receive returns the next reply. go-redis heeds ctx's deadline, not its
// cancellation; the factory closes the PubSub to stop it.
func (c pubsubConn) Receive(ctx context.Context) (redlock.PubSubReply, error) {
	v, err := c.ps.Receive(ctx)
	if err != nil {
		return redlock.PubSubReply{}, err
	}
	switch v := v.(type) {
	case *redis.Message:
		kind := "message"
		if v.Pattern != "" {
			kind = "pmessage"
		}
		return redlock.PubSubReply{Kind: kind, Channel: v.Channel, Data: []byte(v.Payload)}, nil
	case *redis.Subscription:
		return redlock.PubSubReply{Kind: v.Kind, Channel: v.Channel}, nil
	case *redis.Pong:
		return redlock.PubSubReply{Kind: "pong"}, nil
	}
	return redlock.PubSubReply{}, fmt.Errorf("redlockgoredis: unexpected pub/sub reply %T", v)
}

func (c pubsubConn) Close() error { return c.ps.Close() }
