package pubsub_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pubsub"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// otherConn is a pubsub.Conn as another client would give one: a real
// connection whose Receive heeds no context, so that only Close stops it
// (go-redis's PubSub.Receive heeds only deadlines).
type otherConn struct {
	psc redis.PubSubConn
}

func (c otherConn) Subscribe(_ context.Context, chs ...string) error {
	return c.psc.Subscribe(redis.Args{}.AddFlat(chs)...)
}

func (c otherConn) Unsubscribe(_ context.Context, chs ...string) error {
	return c.psc.Unsubscribe(redis.Args{}.AddFlat(chs)...)
}

func (c otherConn) Ping(context.Context) error { return c.psc.Ping("") }

func (c otherConn) Receive(context.Context) (pubsub.Reply, error) {
	switch v := c.psc.Receive().(type) {
	case redis.Message:
		return pubsub.Reply{Kind: "message", Channel: v.Channel, Data: v.Data}, nil
	case redis.Subscription:
		return pubsub.Reply{Kind: v.Kind, Channel: v.Channel}, nil
	case redis.Pong:
		return pubsub.Reply{Kind: "pong"}, nil
	case error:
		return pubsub.Reply{}, v
	default:
		return pubsub.Reply{}, fmt.Errorf("unexpected reply %v", v)
	}
}

func (c otherConn) Close() error { return c.psc.Close() }

// openConfig makes the Subscriber of r.config use otherConn through Open.
func openConfig(node *redistest.Node) func(*pubsub.Config) {
	dial := dialer(node)
	return func(c *pubsub.Config) {
		c.Dial = nil
		c.Open = func(ctx context.Context) (pubsub.Conn, error) {
			conn, err := dial(ctx)
			if err != nil {
				return nil, err
			}
			return otherConn{redis.PubSubConn{Conn: conn}}, nil
		}
	}
}

// subscriberIDs returns the ids of the node's clients subscribed to a
// channel.
func subscriberIDs(t *testing.T, node *redistest.Node) []string {
	t.Helper()
	list, err := redis.String(node.Do("CLIENT", "LIST"), nil)
	must(t, err)
	var ids []string
	for line := range strings.SplitSeq(strings.TrimSpace(list), "\n") {
		if strings.Contains(line, " sub=0 ") {
			continue
		}
		for f := range strings.FieldsSeq(line) {
			if id, ok := strings.CutPrefix(f, "id="); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// A Subscriber over a Conn of another client (Config.Open) subscribes,
// delivers, redials and resubscribes after its connection is killed, and
// closes the connection in Close.
func TestOpenConn(t *testing.T) {
	node := start(t)
	s, r := newSub(t, node, openConfig(node))
	must(t, s.Subscribe("a", "b"))
	must(t, s.WaitConfirmed(ctx(t), "a", "b"))
	if recv(t, r.connects, "OnConnect") {
		t.Fatal("first connection reported as a reconnection")
	}
	publish(t, node, "a", "one")
	if m := recv(t, r.msgs, "message"); m != (msg{"a", "one"}) {
		t.Fatalf("got %+v", m)
	}
	must(t, s.Unsubscribe("a"))
	eventually(t, "the unsubscription", func() bool { return numsub(t, node, "a") == 0 })

	ids := subscriberIDs(t, node)
	if len(ids) != 1 {
		t.Fatalf("subscribed clients %v, want one", ids)
	}
	killed, err := redis.Int64(node.Do("CLIENT", "KILL", "ID", ids[0]), nil)
	must(t, err)
	if killed != 1 {
		t.Fatalf("CLIENT KILL ID %s killed %d", ids[0], killed)
	}
	if !recv(t, r.connects, "OnConnect after the kill") {
		t.Fatal("reconnection reported as a first connection")
	}
	if n := numsub(t, node, "b"); n != 1 {
		t.Fatalf("NUMSUB b = %d after the reconnection, want 1", n)
	}
	publish(t, node, "b", "two")
	if m := recv(t, r.msgs, "message"); m != (msg{"b", "two"}) {
		t.Fatalf("got %+v", m)
	}

	again := subscriberIDs(t, node)
	s.Close()
	eventually(t, "Close to close the connection", func() bool {
		list, err := redis.String(node.Do("CLIENT", "LIST", "ID", again[0]), nil)
		return err == nil && list == ""
	})
}

// The health check drops a Conn whose server stopped answering, although
// its Receive heeds no context: the Subscriber closes it.
func TestOpenConnHealthCheck(t *testing.T) {
	node := start(t)
	const interval = 100 * time.Millisecond
	s, r := newSub(t, node, func(c *pubsub.Config) {
		openConfig(node)(c)
		c.HealthInterval = interval
	})
	must(t, s.Subscribe("a"))
	must(t, s.WaitConfirmed(ctx(t), "a"))
	recv(t, r.connects, "OnConnect")
	for len(r.disconnects) > 0 {
		<-r.disconnects
	}
	node.Pause()
	err := recv(t, r.disconnects, "OnDisconnect of the paused server")
	node.Resume()
	wantErr(t, err, pubsub.ErrHealthCheck)
	if !recv(t, r.connects, "OnConnect after SIGCONT") {
		t.Fatal("reconnection reported as a first connection")
	}
	publish(t, node, "a", "back")
	if m := recv(t, r.msgs, "message"); m != (msg{"a", "back"}) {
		t.Fatalf("got %+v", m)
	}
}
