package sdlstore_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/sdlstore"
)

// logBuffer is an io.Writer safe for the subscriber goroutines and the test.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// publishEvent publishes one event on channel ch of ns.
func publishEvent(t *testing.T, e *env, ns, ch, ev string) {
	t.Helper()
	must(t, e.s.SetAndPublish(ctx(t), ns, sdlstore.ChannelEvents{ch: {ev}}, map[string][]byte{"k": {}}))
}

// waitDropped waits until the Store has dropped exactly n events. The
// count only grows, so reaching n also means no further event was dropped
// before the last of the n.
func waitDropped(t *testing.T, s *sdlstore.Store, n uint64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); s.DroppedEvents() != n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("DroppedEvents = %d, want %d", s.DroppedEvents(), n)
		}
	}
}

// A callback that blocks makes the bounded queue fill: further events are
// dropped, counted and logged, the connection keeps reading (a new channel
// can still be subscribed), and once the callback returns the queued events
// come in order, then new ones.
func TestEventQueueSlowConsumerDrops(t *testing.T) {
	logs := &logBuffer{}
	e := newEnv(t, 1, sdlstore.WithEventQueue(4), sdlstore.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	c, s := ctx(t), e.s
	entered, release := make(chan struct{}), make(chan struct{})
	delivered := make(chan string, 100)
	cb := func(_ string, evs []string) {
		if evs[0] == "0" {
			close(entered)
			<-release
		}
		delivered <- evs[0]
	}
	must(t, s.SubscribeChannel(c, "ns", cb, "ch"))
	publishEvent(t, e, "ns", "ch", "0")
	<-entered
	for i := 1; i <= 20; i++ {
		publishEvent(t, e, "ns", "ch", fmt.Sprint(i))
	}
	waitDropped(t, s, 16) // 1..4 wait in the queue, 5..20 found it full
	must(t, s.SubscribeChannel(c, "ns", cb, "other"))
	close(release)
	for i := 0; i <= 4; i++ {
		if got := recvString(t, delivered); got != fmt.Sprint(i) {
			t.Fatalf("delivered %q, want %d", got, i)
		}
	}
	publishEvent(t, e, "ns", "ch", "marker")
	if got := recvString(t, delivered); got != "marker" {
		t.Fatalf("delivered %q after the queued events, want the marker", got)
	}
	if n := s.DroppedEvents(); n != 16 {
		t.Fatalf("DroppedEvents = %d after the backlog cleared, want 16", n)
	}
	out := logs.String()
	if strings.Count(out, "event queue full") != 1 || strings.Count(out, "takes notifications again") != 1 ||
		!strings.Contains(out, "dropped=16") {
		t.Fatalf("log lines, want one for the start and one for the end of the overflow with dropped=16:\n%s", out)
	}
}

// A consumer that keeps up loses nothing, however many events pass through
// a small queue: the publisher here never has more events in flight than
// the queue holds, and every one is delivered, in order.
func TestEventQueueFastConsumerKeepsEverything(t *testing.T) {
	const size, total = 8, 1000
	e := newEnv(t, 1, sdlstore.WithEventQueue(size))
	s := e.s
	delivered := make(chan string, total)
	must(t, s.SubscribeChannel(ctx(t), "ns", func(_ string, evs []string) { delivered <- evs[0] }, "ch"))
	var got []string
	for i := range total {
		for i-len(got) >= size { // as many in flight as the queue holds
			got = append(got, recvString(t, delivered))
		}
		publishEvent(t, e, "ns", "ch", fmt.Sprint(i))
	}
	for len(got) < total {
		got = append(got, recvString(t, delivered))
	}
	for i, g := range got {
		if g != fmt.Sprint(i) {
			t.Fatalf("event %d delivered as %q", i, g)
		}
	}
	if n := s.DroppedEvents(); n != 0 {
		t.Fatalf("DroppedEvents = %d for a consumer that kept up, want 0", n)
	}
}

// In polling mode the queue also holds at most WithEventQueue events until
// HandleEvents takes them.
func TestEventQueuePollingDrops(t *testing.T) {
	e := newEnv(t, 1, sdlstore.WithEventPolling(), sdlstore.WithEventQueue(3))
	c, s := ctx(t), e.s
	must(t, s.SubscribeChannel(c, "ns", func(string, []string) {}, "ch"))
	for i := range 5 {
		publishEvent(t, e, "ns", "ch", fmt.Sprint(i))
	}
	waitDropped(t, s, 2)
	for i := range 3 {
		_, evs, ok, err := s.HandleEvents(c)
		must(t, err)
		if !ok || evs[0] != fmt.Sprint(i) {
			t.Fatalf("HandleEvents = %v, %v; want event %d", evs, ok, i)
		}
	}
	if _, _, ok, err := s.HandleEvents(c); ok || err != nil {
		t.Fatalf("HandleEvents after the queue emptied = %v, %v", ok, err)
	}
}

func TestEventQueueOptionValidated(t *testing.T) {
	c := newEnv(t, 1).c
	for _, n := range []int{0, -1} {
		_, err := sdlstore.New([]redlock.Pool{c.Nodes[0].Pool()}, sdlstore.WithEventQueue(n))
		wantErr(t, err, sdlstore.ErrInvalidArgument)
	}
}

// recvString receives from c or fails the test after 10 s.
func recvString(t *testing.T, c <-chan string) string {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing delivered within 10s")
		return ""
	}
}
