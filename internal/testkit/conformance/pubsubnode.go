package conformance

import (
	"context"
	"fmt"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
)

// RedigoPubSub is redigo posing as another client that can subscribe: its
// nodes are redlock.PubSubNodes (see PubSubNodes), for the tests of the
// root module that need one without the goredis or rueidis module.
var RedigoPubSub = Client{Name: "redigo as a PubSubNode", Nodes: PubSubNodes(nil)}

// PubSubNodes returns a Nodes function whose nodes carry their commands
// through a redlock.NewPool each (as a plain Node, not a PoolNode) and are
// redlock.PubSubNodes whose PubSub dials a redigo connection of its own,
// or fails with fail when it is not nil. The connections' Receive heeds no
// context, like go-redis's: their owner must close them to stop it.
func PubSubNodes(fail error) func(t *testing.T, addrs []string) []redlock.Node {
	return func(t *testing.T, addrs []string) []redlock.Node {
		nodes := make([]redlock.Node, len(addrs))
		for i, a := range addrs {
			p, err := redlock.NewPool("redis://" + a)
			if err != nil {
				t.Fatalf("NewPool: %v", err)
			}
			t.Cleanup(func() { p.Close() })
			nodes[i] = subNode{Node: redlock.PoolNode(p), addr: a, fail: fail}
		}
		return nodes
	}
}

// subNode is a node of PubSubNodes.
type subNode struct {
	redlock.Node
	addr string
	fail error
}

var _ redlock.PubSubNode = subNode{}

func (n subNode) PubSub(ctx context.Context) (redlock.PubSubConn, error) {
	if n.fail != nil {
		return nil, n.fail
	}
	c, err := redis.DialContext(ctx, "tcp", n.addr)
	if err != nil {
		return nil, err
	}
	return subConn{redis.PubSubConn{Conn: c}}, nil
}

// subConn is a redigo pub/sub connection as a redlock.PubSubConn.
type subConn struct{ psc redis.PubSubConn }

func (c subConn) Subscribe(_ context.Context, chs ...string) error {
	return c.psc.Subscribe(redis.Args{}.AddFlat(chs)...)
}

func (c subConn) Unsubscribe(_ context.Context, chs ...string) error {
	return c.psc.Unsubscribe(redis.Args{}.AddFlat(chs)...)
}

func (c subConn) Ping(context.Context) error { return c.psc.Ping("") }

func (c subConn) Receive(context.Context) (redlock.PubSubReply, error) {
	switch v := c.psc.Receive().(type) {
	case redis.Message:
		return redlock.PubSubReply{Kind: "message", Channel: v.Channel, Data: v.Data}, nil
	case redis.Subscription:
		return redlock.PubSubReply{Kind: v.Kind, Channel: v.Channel}, nil
	case redis.Pong:
		return redlock.PubSubReply{Kind: "pong"}, nil
	case error:
		return redlock.PubSubReply{}, v
	default:
		return redlock.PubSubReply{}, fmt.Errorf("conformance: unexpected pub/sub reply %v", v)
	}
}

func (c subConn) Close() error { return c.psc.Close() }
