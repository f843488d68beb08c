package sdlsuite

import (
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redlockplus/redlock/sdlstore"
)

func init() {
	cases = append(cases, []testCase{
		{name: "NotificationsListener", instances: both, run: testNotificationsListener, subscribes: true},
		{name: "NotificationsPolling", instances: []int{3}, opts: []sdlstore.Option{sdlstore.WithEventPolling()}, run: testNotificationsPolling, subscribes: true},
	}...)
}

// Note is one callback invocation.
type Note struct {
	Channel string
	Events  []string
}

// note is Note inside the suite.
type note = Note

// Collector returns a callback that sends to a channel, and a receive
// helper that fails the test after a timeout; sdlstore's own tests use it
// too.
func Collector(t *testing.T) (func(string, []string), func() Note) {
	ch := make(chan note, 1024)
	cb := func(c string, evs []string) { ch <- note{c, evs} }
	next := func() note {
		t.Helper()
		select {
		case n := <-ch:
			return n
		case <-time.After(10 * time.Second):
			t.Fatal("no notification within 10s")
			return note{}
		}
	}
	return cb, next
}

// collector is Collector inside the suite.
var collector = Collector

// Is reports whether the invocation was for channel with these events.
func (n Note) Is(channel string, events ...string) bool {
	return n.Channel == channel && slices.Equal(n.Events, events)
}

func testNotificationsListener(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	cb, next := collector(t)
	must(t, s.SubscribeChannel(c, "nsA", cb, "ch1", "ch2"))
	must(t, s.SubscribeChannel(c, "nsB", cb, "ch1"))
	must(t, s.SetAndPublish(c, "nsA", sdlstore.ChannelEvents{"ch1": {"a", "b"}}, map[string][]byte{"k": []byte("v")}))
	if n := next(); !n.Is("ch1", "a", "b") {
		t.Fatalf("got %+v", n)
	}
	must(t, s.SetAndPublish(c, "nsB", sdlstore.ChannelEvents{"ch1": {"fromB"}}, map[string][]byte{"k": []byte("v")}))
	if n := next(); !n.Is("ch1", "fromB") {
		t.Fatalf("got %+v", n)
	}
	// Unsubscribed channels are no longer delivered; others still are.
	must(t, s.UnsubscribeChannel(c, "nsA", "ch1"))
	must(t, s.SetAndPublish(c, "nsA", sdlstore.ChannelEvents{"ch1": {"dropped"}, "ch2": {"kept"}}, map[string][]byte{"k": []byte("v")}))
	if n := next(); !n.Is("ch2", "kept") {
		t.Fatalf("got %+v", n)
	}
	// Re-subscribing replaces the callback.
	cb2, next2 := collector(t)
	must(t, s.SubscribeChannel(c, "nsA", cb2, "ch2"))
	must(t, s.RemoveAndPublish(c, "nsA", sdlstore.ChannelEvents{"ch2": {"second"}}, "k"))
	if n := next2(); !n.Is("ch2", "second") {
		t.Fatalf("got %+v", n)
	}
	// StartEventListener is the default already; a second call is rejected.
	must(t, s.StartEventListener())
	wantErr(t, s.StartEventListener(), sdlstore.ErrRejectedByBackend)
	_, _, _, err := s.HandleEvents(c)
	wantErr(t, err, sdlstore.ErrRejectedByBackend)
}

func testNotificationsPolling(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	var mu sync.Mutex
	var calls []note
	cb := func(ch string, evs []string) { mu.Lock(); calls = append(calls, note{ch, evs}); mu.Unlock() }
	if _, _, ok, err := s.HandleEvents(c); ok || err != nil {
		t.Fatalf("HandleEvents with nothing queued = %v, %v", ok, err)
	}
	must(t, s.SubscribeChannel(c, "poll", cb, "ch"))
	must(t, s.SetAndPublish(c, "poll", sdlstore.ChannelEvents{"ch": {"e1"}}, map[string][]byte{"k": {}}))
	must(t, s.SetAndPublish(c, "poll", sdlstore.ChannelEvents{"ch": {"e2", "e3"}}, map[string][]byte{"k": {}}))
	var got []note
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < 2 && time.Now().Before(deadline) {
		ch, evs, ok, err := s.HandleEvents(c)
		must(t, err)
		if ok {
			got = append(got, note{ch, evs})
		} else {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if len(got) != 2 || !got[0].Is("ch", "e1") || !got[1].Is("ch", "e2", "e3") {
		t.Fatalf("HandleEvents returned %+v", got)
	}
	mu.Lock()
	if len(calls) != 2 {
		t.Fatalf("callback ran %d times in HandleEvents, want 2", len(calls))
	}
	mu.Unlock()
	// Nothing is delivered in the background in polling mode.
	must(t, s.SetAndPublish(c, "poll", sdlstore.ChannelEvents{"ch": {"queued"}}, map[string][]byte{"k": {}}))
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	if len(calls) != 2 {
		t.Fatalf("callback ran in the background in polling mode")
	}
	mu.Unlock()
	// Switching to the listener delivers what is queued and rejects polling.
	must(t, s.StartEventListener())
	deadline = time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(calls)
		mu.Unlock()
		if n == 3 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	if len(calls) != 3 || !calls[2].Is("ch", "queued") {
		t.Fatalf("after StartEventListener: %+v", calls)
	}
	mu.Unlock()
	_, _, _, err := s.HandleEvents(c)
	wantErr(t, err, sdlstore.ErrRejectedByBackend)
	wantErr(t, s.StartEventListener(), sdlstore.ErrRejectedByBackend)
}

// testSubscribeUnsupported stands in for a case that subscribes, on a
// store that cannot: SubscribeChannel refuses with ErrSubscribeUnsupported
// on every instance, UnsubscribeChannel has nothing to drop, and a publish
// still reaches a raw subscriber.
func testSubscribeUnsupported(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	cb, _ := collector(t)
	for i := range s.Instances() {
		ns := namespaceOn(t, s, i)
		err := s.SubscribeChannel(c, ns, cb, "ch")
		wantErr(t, err, sdlstore.ErrSubscribeUnsupported)
		wantErr(t, err, sdlstore.ErrInvalidArgument)
		must(t, s.UnsubscribeChannel(c, ns, "ch"))
		recv := e.rawSubscriber(i, "{"+ns+"},ch")
		must(t, s.SetAndPublish(c, ns, sdlstore.ChannelEvents{"ch": {"e"}}, map[string][]byte{"k": []byte("v")}))
		if m, ok := recv(5 * time.Second); !ok || string(m.Data) != "e" {
			t.Fatalf("instance %d: raw subscriber got %q (%v), want the event", i, m.Data, ok)
		}
	}
	wantErr(t, s.SubscribeChannel(c, "", cb, "ch"), sdlstore.ErrInvalidArgument)
}

// namespaceOn returns a namespace whose home is instance i.
func namespaceOn(t *testing.T, s *sdlstore.Store, i int) string {
	t.Helper()
	for k := range 1000 {
		if ns := "ns" + strconv.Itoa(k); s.InstanceIndex(ns) == i {
			return ns
		}
	}
	t.Fatalf("no namespace among 1000 lives on instance %d", i)
	return ""
}

// AwaitSubscribe subscribes cb to channel of namespace ns, trying again
// every 20 ms while the store fails, as it does until a restarted instance
// answers; it fails the test after 10 s. sdlstore's own tests use it too.
func AwaitSubscribe(t *testing.T, s *sdlstore.Store, cb func(string, []string), ns, channel string) {
	t.Helper()
	c := ctx(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.SubscribeChannel(c, ns, cb, channel)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("SubscribeChannel after restart: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
