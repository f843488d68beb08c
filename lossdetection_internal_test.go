package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// TestRedirectToAStranger points a connection's tracking at a client that
// is not the factory's subscriber, as a stale id does after a server
// restart: checkRedirect refuses it and turns tracking off again, while a
// redirect to the factory's named subscriber is kept.
func TestRedirectToAStranger(t *testing.T) {
	c, pools := poolsOf(t, 3)
	f, err := NewFactory(pools)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := f.det
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dial := func() redis.Conn {
		conn, err := redis.Dial("tcp", c.Nodes[0].Addr(), redis.DialReadTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	// Two pub/sub clients: a stranger, and one named as the subscriber.
	stranger, ours := dial(), dial()
	if _, err := ours.Do("CLIENT", "SETNAME", d.name); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 2)
	for i, sub := range []redis.Conn{stranger, ours} {
		if ids[i], err = redis.Int64(sub.Do("CLIENT", "ID")); err != nil {
			t.Fatal(err)
		}
		if _, err := sub.Do("SUBSCRIBE", "elsewhere"); err != nil {
			t.Fatal(err)
		}
	}
	cmd := dial()
	for i, want := range []error{errMisdirected, nil} {
		_ = cmd.Send("CLIENT", "TRACKING", "on", "REDIRECT", ids[i], "NOLOOP")
		_ = cmd.Send("CLIENT", "LIST", "ID", ids[i])
		replies, err := redis.Values(redis.DoContext(cmd, ctx, ""))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.checkRedirect(ctx, cmd, replies[0], replies[1]); !errors.Is(err, want) {
			t.Fatalf("redirect %d: checkRedirect = %v, want %v", i, err, want)
		}
		info, err := redis.Values(cmd.Do("CLIENT", "TRACKINGINFO"))
		if err != nil {
			t.Fatal(err)
		}
		flags, _ := redis.Strings(info[1], nil)
		if on := len(flags) > 0 && flags[0] == "on"; on != (want == nil) {
			t.Fatalf("redirect %d: tracking flags %v after checkRedirect", i, flags)
		}
	}
}
