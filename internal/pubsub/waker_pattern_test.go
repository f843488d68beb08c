package pubsub_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redlockplus/redlock/internal/pubsub"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// wakerModel is the shape the lock factory's waker takes on this package:
// one Subscriber per node, the channels of the names that have waiters,
// changed under the owner's lock in the order of its map, a ready signal per
// name closed when any node confirms, and a reconnection that wakes every
// name, since releases published meanwhile were lost.
type wakerModel struct {
	subs []*pubsub.Subscriber

	mu    sync.Mutex // the owner's lock: the callbacks take it too
	names map[string]*interest
}

type interest struct {
	waiters   int
	ready     chan struct{}
	readyOnce sync.Once
	wake      chan string // releases heard
}

const prefix = "released:"

func newWakerModel(t *testing.T, c *redistest.Cluster, spawn func(func()) bool) *wakerModel {
	w := &wakerModel{names: map[string]*interest{}}
	for _, n := range c.Nodes {
		s, err := pubsub.New(pubsub.Config{
			Dial:           dialer(n),
			Spawn:          spawn,
			OnMessage:      w.released,
			OnConfirm:      w.confirmed,
			OnConnect:      w.reconnected,
			HealthInterval: time.Second,
			MinBackoff:     10 * time.Millisecond,
			MaxBackoff:     100 * time.Millisecond,
		})
		must(t, err)
		w.subs = append(w.subs, s)
	}
	return w
}

// watch adds a waiter of name; the first one subscribes its channel on
// every node, under mu, so that a later unwatch cannot overtake it.
func (w *wakerModel) watch(name string) *interest {
	w.mu.Lock()
	defer w.mu.Unlock()
	in := w.names[name]
	if in == nil {
		in = &interest{ready: make(chan struct{}), wake: make(chan string, 16)}
		w.names[name] = in
		for _, s := range w.subs {
			_ = s.Subscribe(prefix + name) // no I/O: fine under mu
		}
	}
	in.waiters++
	return in
}

// unwatch removes a waiter; the last one unsubscribes, under mu.
func (w *wakerModel) unwatch(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	in := w.names[name]
	if in.waiters--; in.waiters == 0 {
		delete(w.names, name)
		for _, s := range w.subs {
			_ = s.Unsubscribe(prefix + name)
		}
	}
}

func (w *wakerModel) released(channel string, token []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if in := w.names[channel[len(prefix):]]; in != nil {
		select {
		case in.wake <- string(token):
		default:
		}
	}
}

func (w *wakerModel) confirmed(channel string) {
	w.mu.Lock()
	in := w.names[channel[len(prefix):]]
	w.mu.Unlock()
	if in != nil {
		in.readyOnce.Do(func() { close(in.ready) })
	}
}

func (w *wakerModel) reconnected(reconnect bool) {
	if !reconnect {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, in := range w.names {
		select {
		case in.wake <- "reconnected":
		default:
		}
	}
}

// close stops the subscribers, outside mu: Close waits for readers that
// may be waiting for mu.
func (w *wakerModel) close() {
	for _, s := range w.subs {
		s.Close()
	}
}

// The waker's use of the package works end to end on three nodes: ready
// opens once a node confirmed, a release on any node wakes the name, the
// last waiter leaves no subscription behind, a restarted node is
// resubscribed and its reconnection wakes the waiters, and the owner's
// spawn accounts for every goroutine.
func TestWakerPattern(t *testing.T) {
	c := redistest.Start(t, 3)
	var wg sync.WaitGroup
	spawn := func(f func()) bool { wg.Add(1); go func() { defer wg.Done(); f() }(); return true }
	w := newWakerModel(t, c, spawn)
	defer func() { w.close(); wg.Wait() }()

	in := w.watch("lock1")
	recv(t, in.ready, "ready")
	// ready means one node confirmed, not necessarily node 1.
	eventually(t, "node 1 subscribed", func() bool { return numsub(t, c.Nodes[1], prefix+"lock1") == 1 })
	publish(t, c.Nodes[1], prefix+"lock1", "token-a")
	if tok := recv(t, in.wake, "wake-up"); tok != "token-a" {
		t.Fatalf("woken by %q", tok)
	}

	w.watch("lock1") // a second waiter shares the subscription
	w.unwatch("lock1")
	w.unwatch("lock1")
	for i, n := range c.Nodes {
		eventually(t, fmt.Sprint("node ", i, " unsubscribed"), func() bool { return numsub(t, n, prefix+"lock1") == 0 })
	}

	in = w.watch("lock2")
	recv(t, in.ready, "ready")
	// Node 2's subscriber must have been connected before the restart for
	// its next connection to be a reconnection.
	eventually(t, "node 2 subscribed", func() bool { return numsub(t, c.Nodes[2], prefix+"lock2") == 1 })
	c.Nodes[2].Kill()
	c.Nodes[2].Start()
	if tok := recv(t, in.wake, "wake-up after a reconnection"); tok != "reconnected" {
		t.Fatalf("woken by %q", tok)
	}
	if n := numsub(t, c.Nodes[2], prefix+"lock2"); n != 1 {
		t.Fatalf("restarted node has %d subscribers of lock2 at OnConnect, want 1", n)
	}
	publish(t, c.Nodes[2], prefix+"lock2", "token-b")
	if tok := recv(t, in.wake, "wake-up from the restarted node"); tok != "token-b" {
		t.Fatalf("woken by %q", tok)
	}
}
