package pubsub_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pubsub"
)

// WaitConfirmed returns once the server has the channels subscribed;
// OnConfirm reports each, OnConnect the first connection, and messages
// arrive.
func TestSubscribeConfirmsAndDelivers(t *testing.T) {
	node := start(t)
	s, r := newSub(t, node, nil)
	must(t, s.Subscribe("a", "b"))
	must(t, s.WaitConfirmed(ctx(t), "a", "b"))
	for _, ch := range []string{"a", "b"} {
		if n := numsub(t, node, ch); n != 1 {
			t.Fatalf("NUMSUB %s = %d after WaitConfirmed, want 1", ch, n)
		}
	}
	got := []string{recv(t, r.confirms, "confirmation"), recv(t, r.confirms, "confirmation")}
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("confirmed %v, want [a b]", got)
	}
	if re := recv(t, r.connects, "OnConnect"); re {
		t.Fatal("OnConnect(reconnect=true) for the first connection")
	}
	publish(t, node, "a", "x")
	publish(t, node, "b", "y")
	if m := recv(t, r.msgs, "message"); m != (msg{"a", "x"}) {
		t.Fatalf("got %+v", m)
	}
	if m := recv(t, r.msgs, "message"); m != (msg{"b", "y"}) {
		t.Fatalf("got %+v", m)
	}
	// Subscribing again changes nothing and is confirmed at once.
	must(t, s.Subscribe("a"))
	must(t, s.WaitConfirmed(ctx(t), "a"))
	if n := numsub(t, node, "a"); n != 1 {
		t.Fatalf("NUMSUB a = %d after a second Subscribe, want 1", n)
	}
}

// Nothing is dialled before the first Subscribe.
func TestNoConnectionBeforeSubscribe(t *testing.T) {
	node := start(t)
	dials := make(chan struct{}, 10)
	s, _ := newSub(t, node, func(c *pubsub.Config) {
		dial := c.Dial
		c.Dial = func(ctx context.Context) (redis.Conn, error) { dials <- struct{}{}; return dial(ctx) }
	})
	none(t, dials, 200*time.Millisecond, "dial before Subscribe")
	must(t, s.Subscribe("a"))
	recv(t, dials, "dial after Subscribe")
}

// WaitConfirmed rejects a channel outside the set.
func TestWaitConfirmedUnknownChannel(t *testing.T) {
	s, _ := newSub(t, start(t), nil)
	must(t, s.Subscribe("a"))
	wantErr(t, s.WaitConfirmed(ctx(t), "a", "b"), pubsub.ErrNotSubscribed)
}

// After Unsubscribe the server drops the channel and its messages are not
// delivered; the other channels still are.
func TestUnsubscribeStopsDelivery(t *testing.T) {
	node := start(t)
	s, r := newSub(t, node, nil)
	must(t, s.Subscribe("a", "b"))
	must(t, s.WaitConfirmed(ctx(t), "a", "b"))
	must(t, s.Unsubscribe("a", "never-subscribed"))
	wantErr(t, s.WaitConfirmed(ctx(t), "a"), pubsub.ErrNotSubscribed)
	eventually(t, "server drops a", func() bool { return numsub(t, node, "a") == 0 })
	publish(t, node, "a", "lost")
	publish(t, node, "b", "kept")
	if m := recv(t, r.msgs, "message"); m != (msg{"b", "kept"}) {
		t.Fatalf("got %+v, want the message of b only", m)
	}
}

// Messages already read from the socket or on their way when Unsubscribe
// returns are not delivered: the reader checks the set before OnMessage.
func TestNoMessageAfterUnsubscribe(t *testing.T) {
	node := start(t)
	entered, release := make(chan struct{}), make(chan struct{})
	s, r := newSub(t, node, func(c *pubsub.Config) {
		deliver := c.OnMessage
		c.OnMessage = func(ch string, data []byte) {
			if string(data) == "hold" {
				close(entered)
				<-release // the reader stops here while more messages arrive
			}
			deliver(ch, data)
		}
	})
	must(t, s.Subscribe("a", "b"))
	must(t, s.WaitConfirmed(ctx(t), "a", "b"))
	publish(t, node, "a", "hold")
	recv(t, entered, "held message")
	for i := range 50 {
		publish(t, node, "a", fmt.Sprint(i))
	}
	must(t, s.Unsubscribe("a"))
	publish(t, node, "b", "marker")
	close(release)
	if m := recv(t, r.msgs, "message"); m != (msg{"a", "hold"}) {
		t.Fatalf("got %+v, want the held message", m)
	}
	if m := recv(t, r.msgs, "message"); m != (msg{"b", "marker"}) {
		t.Fatalf("got %+v after Unsubscribe, want the marker of b", m)
	}
}

// Subscribe, Unsubscribe and Subscribe in quick succession always end
// subscribed, and WaitConfirmed returns only when the last SUBSCRIBE is
// confirmed: a publish right after it is heard every time.
func TestRapidResubscribeIsNeverLost(t *testing.T) {
	node := start(t)
	s, r := newSub(t, node, nil)
	must(t, s.Subscribe("warm"))
	must(t, s.WaitConfirmed(ctx(t), "warm"))
	for i := range 200 {
		must(t, s.Subscribe("c"))
		if i%3 == 1 {
			time.Sleep(time.Millisecond) // let the writer send some of the sequence
		}
		must(t, s.Unsubscribe("c"))
		if i%3 == 2 {
			time.Sleep(time.Millisecond)
		}
		must(t, s.Subscribe("c"))
		must(t, s.WaitConfirmed(ctx(t), "c"))
		if n := publish(t, node, "c", fmt.Sprint(i)); n != 1 {
			t.Fatalf("round %d: publish reached %d clients after WaitConfirmed, want 1", i, n)
		}
		for {
			m := recv(t, r.msgs, "message")
			if m == (msg{"c", fmt.Sprint(i)}) {
				break
			}
		}
	}
}

// Goroutines that each toggle their own channels many times leave the
// server with exactly the channels they last asked for.
func TestConcurrentTogglesEndInTheLastState(t *testing.T) {
	node := start(t)
	s, _ := newSub(t, node, nil)
	must(t, s.Subscribe("warm"))
	must(t, s.WaitConfirmed(ctx(t), "warm"))
	const workers, rounds = 8, 300
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch := fmt.Sprint("w", w)
			for i := range rounds {
				_ = s.Subscribe(ch)
				_ = s.Unsubscribe(ch)
				if i%50 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
			if w%2 == 0 { // even workers end subscribed
				_ = s.Subscribe(ch)
			}
		}()
	}
	wg.Wait()
	var even []string
	for w := 0; w < workers; w += 2 {
		even = append(even, fmt.Sprint("w", w))
	}
	must(t, s.WaitConfirmed(ctx(t), even...))
	for w := range workers {
		want := int64(1 - w%2)
		ch := fmt.Sprint("w", w)
		eventually(t, "NUMSUB "+ch, func() bool { return numsub(t, node, ch) == want })
	}
}

// TestConfirmedAcrossAQuickResubscribe: a channel taken out and put back
// before the writer ran stays confirmed, and says so at once, since the
// server will not confirm it again.
func TestConfirmedAcrossAQuickResubscribe(t *testing.T) {
	s, _ := newSub(t, start(t), nil)
	must(t, s.Subscribe("quick"))
	must(t, s.WaitConfirmed(ctx(t), "quick"))
	if !s.Confirmed("quick") {
		t.Fatal("a confirmed channel reports unconfirmed")
	}
	toggled := 0
	for range 200 {
		must(t, s.Unsubscribe("quick"))
		if s.Confirmed("quick") {
			t.Fatal("a channel out of the set reports confirmed")
		}
		must(t, s.Subscribe("quick"))
		if s.Confirmed("quick") {
			toggled++ // put back before the UNSUBSCRIBE was written
		}
		must(t, s.WaitConfirmed(ctx(t), "quick"))
	}
	t.Logf("%d of 200 quick resubscriptions were confirmed at once", toggled)
	if !s.Confirmed("quick") {
		t.Fatal("not confirmed at the end")
	}
}
