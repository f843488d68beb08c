package pubsub_test

import (
	"context"
	"slices"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pubsub"
)

// TestOnKeysInvalidations runs a Subscriber as the redirect target of a
// connection with client-side caching on (RESP2): a change of a key the
// connection read arrives through OnKeys as an array of keys, a FLUSHALL as
// nil, and the connection stays up.
func TestOnKeysInvalidations(t *testing.T) {
	node := start(t)
	ids := make(chan int64, 4)
	keys := make(chan []string, 16)
	s, r := newSub(t, node, func(c *pubsub.Config) {
		dial := c.Dial
		c.Dial = func(ctx context.Context) (redis.Conn, error) {
			conn, err := dial(ctx)
			if err != nil {
				return nil, err
			}
			id, err := redis.Int64(redis.DoContext(conn, ctx, "CLIENT", "ID"))
			if err != nil {
				conn.Close()
				return nil, err
			}
			ids <- id
			return conn, nil
		}
		c.OnKeys = func(_ string, k []string) { keys <- k }
	})
	if err := s.Subscribe("__redis__:invalidate"); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitConfirmed(context.Background(), "__redis__:invalidate"); err != nil {
		t.Fatal(err)
	}
	id := recv(t, ids, "the subscriber's client id")

	tracking, err := redis.Dial("tcp", node.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer tracking.Close()
	if _, err := tracking.Do("CLIENT", "TRACKING", "on", "REDIRECT", id); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if _, err := tracking.Do("GET", k); err != nil {
			t.Fatal(err)
		}
	}
	node.Do("MSET", "a", "1", "b", "2")
	got := recv(t, keys, "the invalidation of a") // MSET may announce both in one message
	if len(got) < 2 {
		got = append(got, recv(t, keys, "the invalidation of b")...)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("invalidated keys %q, want [a b]", got)
	}
	node.Do("FLUSHALL")
	if k := recv(t, keys, "the invalidation of a flush"); k != nil {
		t.Fatalf("a flush invalidated %q, want nil (every key)", k)
	}
	if n := len(r.disconnects); n > 0 {
		t.Fatalf("the connection dropped %d times on invalidation messages: %v", n, <-r.disconnects)
	}
}
