package redlock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/conformance"
	"github.com/redlockplus/redlock/internal/redistest"
)

// subNode is a Node of another client that is a PubSubNode: a redigo pool
// carries its commands (as a plain Node, not a PoolNode) and PubSub dials
// a connection of its own, or fails with fail when it is set.
type subNode struct {
	redlock.Node
	addr string
	fail error
}

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

// subConn is a redigo pub/sub connection as a PubSubConn whose Receive
// heeds no context, like go-redis's: the factory must close it to stop it.
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
		return redlock.PubSubReply{}, fmt.Errorf("unexpected reply %v", v)
	}
}

func (c subConn) Close() error { return c.psc.Close() }

// subNodes makes the subNodes of addrs.
func subNodes(fail error) func(t *testing.T, addrs []string) []redlock.Node {
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

// TestPubSubNode: a factory over PubSubNodes of another client is woken by
// releases over their connections, which it closes in Close and opens
// again after the server killed them.
func TestPubSubNode(t *testing.T) {
	conformance.RunWakeups(t, conformance.Client{Name: "redigo as a PubSubNode", Nodes: subNodes(nil)})
}

// TestPubSubNodeFailing: PubSubNodes whose PubSub always fails leave the
// blocked Acquire calls polling while the subscribers try again, and Close
// still returns (the leak check of TestMain finds their goroutines gone).
func TestPubSubNodeFailing(t *testing.T) {
	cl := redistest.Start(t, 3)
	ctx := ctxT(t, 30*time.Second)
	var log bytes.Buffer // written under the handler's lock, read after Close
	f, err := redlock.NewFactoryFromNodes(subNodes(errors.New("no pub/sub here"))(t, cl.Addrs()),
		redlock.WithRetryDelay(50*time.Millisecond), redlock.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	if err != nil {
		t.Fatal(err)
	}
	holder := f.NewLock("polled", redlock.WithTTL(500*time.Millisecond), redlock.WithAutoextend(false))
	if _, err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	w := f.NewLock("polled", redlock.WithRetryTimes(1<<20))
	if _, err := w.Acquire(ctx); err != nil {
		t.Fatalf("Acquire after the holder's key expired: %v", err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !strings.Contains(log.String(), "no pub/sub here") {
		t.Fatalf("no subscriber tried PubSub; log:\n%s", log.String())
	}
}
