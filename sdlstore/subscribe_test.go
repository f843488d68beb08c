package sdlstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
	"github.com/redlockplus/redlock/internal/testkit/sdlsuite"
	"github.com/redlockplus/redlock/sdlstore"
)

// The suite's notification helpers.
var collector = sdlsuite.Collector

// note is one callback invocation.
type note = sdlsuite.Note

// All channels of all namespaces of an instance share one connection.
func TestNotificationsShareOneConnection(t *testing.T) {
	e := newEnv(t, 1)
	c, s := ctx(t), e.s
	cb, _ := collector(t)
	for _, ns := range []string{"n1", "n2", "n3"} {
		must(t, s.SubscribeChannel(c, ns, cb, "a", "b", "c"))
	}
	list, _ := redis.String(e.c.Nodes[0].Do("CLIENT", "LIST", "TYPE", "pubsub"), nil)
	if n := strings.Count(list, "\n"); n != 1 || !strings.Contains(list, "sub=9") {
		t.Fatalf("pubsub clients:\n%s", list)
	}
}

// A blocked callback does not stall the connection's reader: new
// subscriptions are confirmed and later messages are read meanwhile, then
// delivered in order.
func TestCallbacksRunOffTheReader(t *testing.T) {
	e := newEnv(t, 1)
	c, s := ctx(t), e.s
	release := make(chan struct{})
	cb, next := collector(t)
	blocking := func(ch string, evs []string) {
		if evs[0] == "block" {
			<-release
		}
		cb(ch, evs)
	}
	must(t, s.SubscribeChannel(c, "ns", blocking, "ch"))
	must(t, s.SetAndPublish(c, "ns", sdlstore.ChannelEvents{"ch": {"block"}}, map[string][]byte{"k": {}}))
	time.Sleep(50 * time.Millisecond) // let the callback start and block
	sub, cancel := context.WithTimeout(c, 5*time.Second)
	defer cancel()
	if err := s.SubscribeChannel(sub, "ns", blocking, "other"); err != nil {
		close(release)
		t.Fatalf("SubscribeChannel while a callback blocks: %v", err)
	}
	must(t, s.SetAndPublish(c, "ns", sdlstore.ChannelEvents{"ch": {"after"}, "other": {"o"}}, map[string][]byte{"k": {}}))
	close(release)
	for _, want := range []note{{Channel: "ch", Events: []string{"block"}}, {Channel: "ch", Events: []string{"after"}}, {Channel: "other", Events: []string{"o"}}} {
		if n := next(); !n.Is(want.Channel, want.Events...) {
			t.Fatalf("got %+v, want %+v", n, want)
		}
	}
}

// After the instance restarts, the subscriber reconnects and resubscribes;
// events published while it was down are lost.
func TestNotificationsAfterRestart(t *testing.T) {
	e := newEnv(t, 1, sdlstore.WithReconnectDelay(20*time.Millisecond), sdlstore.WithHealthCheckInterval(200*time.Millisecond))
	c, s := ctx(t), e.s
	cb, next := collector(t)
	must(t, s.SubscribeChannel(c, "ns", cb, "ch"))
	must(t, s.SetAndPublish(c, "ns", sdlstore.ChannelEvents{"ch": {"before"}}, map[string][]byte{"k": {}}))
	if n := next(); !n.Is("ch", "before") {
		t.Fatalf("got %+v", n)
	}
	node := e.c.Nodes[0]
	node.Kill()
	err := s.Set(c, "ns", map[string][]byte{"k": {}})
	wantErr(t, err, sdlstore.ErrNotConnected)
	node.Start()
	// Publish until the resubscribed connection delivers.
	deadline := time.Now().Add(15 * time.Second)
	var n note
	got := make(chan note, 1)
	go func() { got <- next() }()
	for done := false; !done; {
		if time.Now().After(deadline) {
			t.Fatal("no notification after restart")
		}
		_ = s.SetAndPublish(c, "ns", sdlstore.ChannelEvents{"ch": {"after"}}, map[string][]byte{"k": {}})
		select {
		case n = <-got:
			done = true
		case <-time.After(50 * time.Millisecond):
		}
	}
	if !n.Is("ch", "after") {
		t.Fatalf("got %+v", n)
	}
}

// While the instance is down, SubscribeChannel fails with ErrNotConnected
// and keeps nothing; once it is back, subscribing works.
func TestSubscribeWhileDown(t *testing.T) {
	e := newEnv(t, 1, sdlstore.WithReconnectDelay(20*time.Millisecond))
	c, s := ctx(t), e.s
	cb, next := collector(t)
	node := e.c.Nodes[0]
	node.Kill()
	wantErr(t, s.SubscribeChannel(c, "ns", cb, "ch"), sdlstore.ErrNotConnected)
	if s.IsActive(c) {
		t.Fatal("IsActive with the instance down")
	}
	node.Start()
	if !s.IsActive(c) {
		t.Fatal("IsActive false after restart")
	}
	sdlsuite.AwaitSubscribe(t, s, cb, "ns", "ch")
	must(t, s.SetAndPublish(c, "ns", sdlstore.ChannelEvents{"ch": {"x"}}, map[string][]byte{"k": {}}))
	if n := next(); !n.Is("ch", "x") {
		t.Fatalf("got %+v", n)
	}
}

// A hung instance (SIGSTOP) is detected by the health check, and a context
// deadline bounds every call.
func TestHungInstance(t *testing.T) {
	e := newEnv(t, 1, sdlstore.WithHealthCheckInterval(100*time.Millisecond), sdlstore.WithReconnectDelay(20*time.Millisecond))
	c, s := ctx(t), e.s
	cb, next := collector(t)
	must(t, s.SubscribeChannel(c, "ns", cb, "ch"))
	node := e.c.Nodes[0]
	node.Pause()
	short, cancel := context.WithTimeout(c, 200*time.Millisecond)
	began := time.Now()
	err := s.Set(short, "ns", map[string][]byte{"k": {}})
	cancel()
	wantErr(t, err, sdlstore.ErrNotConnected)
	if took := time.Since(began); took > 3*time.Second {
		t.Fatalf("Set on a hung instance returned after %v despite a 200ms deadline", took)
	}
	time.Sleep(400 * time.Millisecond) // > 2 health intervals: the subscriber gives up on the connection
	node.Resume()
	deadline := time.Now().Add(15 * time.Second)
	got := make(chan note, 1)
	go func() { got <- next() }()
	for {
		if time.Now().After(deadline) {
			t.Fatal("no notification after resume")
		}
		_ = s.SetAndPublish(c, "ns", sdlstore.ChannelEvents{"ch": {"back"}}, map[string][]byte{"k": {}})
		select {
		case n := <-got:
			if !n.Is("ch", "back") {
				t.Fatalf("got %+v", n)
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close stops every subscriber and the listener (the leak check in TestMain checks
// it) and later calls fail with ErrClosed.
func TestCloseStopsEverything(t *testing.T) {
	c := redistest.Start(t, 2)
	pools := []redlock.Pool{c.Nodes[0].Pool(), c.Nodes[1].Pool()}
	s, err := sdlstore.New(pools)
	must(t, err)
	cb, _ := collector(t)
	for _, ns := range []string{"a", "b", "c", "d"} {
		must(t, s.SubscribeChannel(ctx(t), ns, cb, "x"))
	}
	must(t, s.Close())
	must(t, s.Close())
	wantErr(t, s.Set(ctx(t), "a", map[string][]byte{"k": {}}), sdlstore.ErrClosed)
	wantErr(t, s.SubscribeChannel(ctx(t), "a", cb, "x"), sdlstore.ErrClosed)
	wantErr(t, s.StartEventListener(), sdlstore.ErrClosed)
	if _, err := s.LockResource("a", "r", time.Second); err == nil {
		t.Fatal("LockResource after Close succeeded")
	}
	// The server notices the closed sockets shortly after.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		list, _ := redis.String(c.Nodes[0].Do("CLIENT", "LIST", "TYPE", "pubsub"), nil)
		if list == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pubsub connections left after Close:\n%s", list)
		}
	}
}
