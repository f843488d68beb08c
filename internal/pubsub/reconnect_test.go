package pubsub_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pubsub"
)

// After the server restarts, the Subscriber dials again, subscribes the
// whole set anew and reports the reconnection.
func TestResubscribeAfterRestart(t *testing.T) {
	node := start(t)
	s, r := newSub(t, node, nil)
	must(t, s.Subscribe("a", "b"))
	must(t, s.WaitConfirmed(ctx(t), "a", "b"))
	if recv(t, r.connects, "OnConnect") {
		t.Fatal("first connection reported as a reconnection")
	}
	node.Kill()
	if err := recv(t, r.disconnects, "OnDisconnect"); err == nil {
		t.Fatal("OnDisconnect(nil)")
	}
	node.Start()
	if !recv(t, r.connects, "OnConnect after restart") {
		t.Fatal("reconnection reported as a first connection")
	}
	// OnConnect comes after the whole set was confirmed on the new connection.
	for _, ch := range []string{"a", "b"} {
		if n := numsub(t, node, ch); n != 1 {
			t.Fatalf("NUMSUB %s = %d at OnConnect, want 1", ch, n)
		}
	}
	must(t, s.WaitConfirmed(ctx(t), "a", "b"))
	publish(t, node, "b", "after")
	if m := recv(t, r.msgs, "message"); m != (msg{"b", "after"}) {
		t.Fatalf("got %+v", m)
	}
}

// A paused server (SIGSTOP) keeps its socket open but answers nothing: the
// health check drops the connection after two intervals, even while the
// writer is stuck on a full socket, and Subscribe and Unsubscribe never wait
// for the network meanwhile. After SIGCONT the Subscriber is back with the
// whole set.
func TestHealthCheckCatchesPausedServer(t *testing.T) {
	node := start(t)
	const interval = 200 * time.Millisecond
	s, r := newSub(t, node, func(c *pubsub.Config) { c.HealthInterval = interval })
	must(t, s.Subscribe("a"))
	must(t, s.WaitConfirmed(ctx(t), "a"))
	recv(t, r.connects, "OnConnect")

	for len(r.disconnects) > 0 { // a reader starved by a loaded machine may have missed a PONG
		<-r.disconnects
	}
	node.Pause()
	paused := time.Now()
	// 16 MB of channel names: more than the socket buffers hold, so the
	// writer blocks in its write until the connection is dropped.
	big := make([]string, 8000)
	for i := range big {
		big[i] = fmt.Sprintf("%06d%s", i, strings.Repeat("x", 2000))
	}
	must(t, s.Subscribe(big...))
	time.Sleep(3 * interval / 2) // the writer is blocked now, if it ever will be
	churned := make(chan struct{})
	go func() {
		defer close(churned)
		for i := range 100 {
			_ = s.Subscribe(fmt.Sprint("x", i))
			_ = s.Unsubscribe(fmt.Sprint("x", i))
		}
	}()
	select {
	case <-churned:
	case <-time.After(2 * time.Second):
		t.Fatal("Subscribe and Unsubscribe wait for a paused server")
	}
	err := recv(t, r.disconnects, "OnDisconnect on a paused server")
	if !errors.Is(err, pubsub.ErrHealthCheck) {
		t.Fatalf("OnDisconnect(%v), want ErrHealthCheck", err)
	}
	if took := time.Since(paused); took < 2*interval {
		t.Fatalf("health check gave up after %v, before two intervals", took)
	}

	node.Resume()
	// After SIGCONT the server first reads what the connections dialled
	// while it was paused had sent (16 MB each), then the new connection's
	// 16 MB: on a loaded machine (CI runs packages in parallel under the
	// race detector) that can take more than two intervals, and the health
	// check drops the new connection too, before or after its OnConnect.
	// The Subscriber must come back with the whole set all the same.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if re := recv(t, r.connects, "OnConnect after SIGCONT"); !re {
			continue
		}
		err := s.WaitConfirmed(ctx(t), append(big, "a")...)
		if err == nil {
			break
		}
		if !errors.Is(err, pubsub.ErrDisconnected) || time.Now().After(deadline) {
			t.Fatalf("the whole set after SIGCONT: %v", err)
		}
	}
	if n := numsub(t, node, big[len(big)-1]); n != 1 {
		t.Fatalf("NUMSUB of a big channel = %d, want 1", n)
	}
	publish(t, node, "a", "back")
	if m := recv(t, r.msgs, "message"); m != (msg{"a", "back"}) {
		t.Fatalf("got %+v", m)
	}
}

// With the server down, WaitConfirmed fails with ErrDisconnected and the
// dial error instead of waiting for its context, and makes the Subscriber
// dial at once instead of finishing a long backoff; once the server is
// back, it succeeds.
func TestWaitConfirmedWhileDown(t *testing.T) {
	node := start(t)
	node.Kill()
	dials := make(chan struct{}, 100)
	s, _ := newSub(t, node, func(c *pubsub.Config) {
		c.MinBackoff, c.MaxBackoff = time.Hour, time.Hour
		dial := c.Dial
		c.Dial = func(ctx context.Context) (redis.Conn, error) {
			put := func() {
				select {
				case dials <- struct{}{}:
				default:
				}
			}
			put()
			return dial(ctx)
		}
	})
	must(t, s.Subscribe("a"))
	recv(t, dials, "first dial")
	for range 3 { // each call waits through a backoff of an hour without the kick
		err := s.WaitConfirmed(ctx(t), "a")
		wantErr(t, err, pubsub.ErrDisconnected)
		var op *net.OpError
		if !errors.As(err, &op) {
			t.Fatalf("error %v does not unwrap to the dial error", err)
		}
	}
	node.Start()
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := s.WaitConfirmed(ctx(t), "a")
		if err == nil {
			break
		}
		wantErr(t, err, pubsub.ErrDisconnected)
		if time.Now().After(deadline) {
			t.Fatalf("WaitConfirmed after restart: %v", err)
		}
	}
	if n := numsub(t, node, "a"); n != 1 {
		t.Fatalf("NUMSUB a = %d, want 1", n)
	}
}

// Failed dials pause for a backoff that doubles up to the maximum; a
// connection that worked is dialled again at once when it breaks.
func TestBackoffGrowsAndResets(t *testing.T) {
	node := start(t)
	var mu sync.Mutex
	var at []time.Time
	s, r := newSub(t, node, func(c *pubsub.Config) {
		c.MinBackoff, c.MaxBackoff = 10*time.Millisecond, 80*time.Millisecond
		dial := c.Dial
		c.Dial = func(ctx context.Context) (redis.Conn, error) {
			mu.Lock()
			at = append(at, time.Now())
			mu.Unlock()
			return dial(ctx)
		}
	})
	must(t, s.Subscribe("a"))
	must(t, s.WaitConfirmed(ctx(t), "a"))
	node.Kill()
	recv(t, r.disconnects, "OnDisconnect")
	lost := time.Now()
	eventually(t, "8 dials", func() bool { mu.Lock(); defer mu.Unlock(); return len(at) >= 9 })
	mu.Lock()
	dials := append([]time.Time(nil), at[1:]...)
	mu.Unlock()
	if d := dials[0].Sub(lost); d > time.Second {
		t.Fatalf("first redial %v after the loss, want at once", d)
	}
	want := []time.Duration{10, 20, 40, 80, 80, 80, 80}
	for i, w := range want {
		if gap := dials[i+1].Sub(dials[i]); gap < w*time.Millisecond {
			t.Fatalf("pause %d was %v, want at least %v", i, gap, w*time.Millisecond)
		}
	}
	node.Start()
	recv(t, r.connects, "first OnConnect")
	for !recv(t, r.connects, "OnConnect after restart") {
	}
}

// A connection with an empty set answers PING with a plain PONG, which is
// not mistaken for a broken connection.
func TestIdleConnectionStaysUp(t *testing.T) {
	node := start(t)
	s, r := newSub(t, node, func(c *pubsub.Config) { c.HealthInterval = 300 * time.Millisecond })
	must(t, s.Subscribe("a"))
	must(t, s.WaitConfirmed(ctx(t), "a"))
	must(t, s.Unsubscribe("a"))
	eventually(t, "server drops a", func() bool { return numsub(t, node, "a") == 0 })
	none(t, r.disconnects, 2*time.Second, "disconnect of an idle connection") // six PINGs
	must(t, s.Subscribe("b"))
	must(t, s.WaitConfirmed(ctx(t), "b"))
}
