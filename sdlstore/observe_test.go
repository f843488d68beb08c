package sdlstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redlockplus/redlock/sdlstore"
)

// opRecorder keeps a Store's observer events.
type opRecorder struct {
	mu   sync.Mutex
	ops  []sdlstore.OperationEvent
	subs []sdlstore.SubscriberEvent
}

func (r *opRecorder) observer() sdlstore.Observer {
	return sdlstore.Observer{
		Operation: func(_ context.Context, e sdlstore.OperationEvent) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.ops = append(r.ops, e)
		},
		Subscriber: func(e sdlstore.SubscriberEvent) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.subs = append(r.subs, e)
		},
	}
}

func (r *opRecorder) take() ([]sdlstore.OperationEvent, []sdlstore.SubscriberEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops, subs := r.ops, r.subs
	r.ops, r.subs = nil, nil
	return ops, subs
}

// The observer hears every operation with its namespace, instance,
// duration and error kind, and the subscriber's connection and reconnection.
func TestObserver(t *testing.T) {
	rec := &opRecorder{}
	e := newEnv(t, 2, sdlstore.WithObserver(rec.observer()), sdlstore.WithReconnectDelay(20*time.Millisecond))
	c, s := ctx(t), e.s
	must(t, s.Set(c, "obs", map[string][]byte{"k": []byte("v")}))
	if _, err := s.Get(c, "obs", "k"); err != nil {
		t.Fatal(err)
	}
	ops, _ := rec.take()
	home := s.InstanceIndex("obs")
	if len(ops) != 2 || ops[0].Op != "set" || ops[1].Op != "get" {
		t.Fatalf("operations %+v, want set then get", ops)
	}
	for _, op := range ops {
		if op.Namespace != "obs" || op.Instance != home || op.Duration <= 0 || op.Kind != "" || op.Err != nil {
			t.Fatalf("operation %+v, want a successful one on instance %d", op, home)
		}
	}

	// A walk over the keys is observed one SCAN at a time.
	if keys, err := s.FindKeys(c, "obs", "*"); err != nil || len(keys) != 1 {
		t.Fatalf("FindKeys = %v, %v", keys, err)
	}
	if ops, _ := rec.take(); len(ops) != 1 || ops[0].Op != "find keys" || ops[0].Namespace != "obs" || ops[0].Err != nil {
		t.Fatalf("operations %+v, want one find keys", ops)
	}

	// A wrong-type reply is rejected by the backend.
	must(t, s.AddMember(c, "obs", "group", []byte("m")))
	if _, err := s.Get(c, "obs", "group"); err != nil {
		t.Fatal(err) // MGET of a set is nil, not an error
	}
	if _, err := s.SetIf(c, "obs", "group", []byte("a"), []byte("b")); err == nil {
		t.Fatal("SetIf on a set succeeded")
	}
	ops, _ = rec.take()
	if last := ops[len(ops)-1]; last.Op != "set if" || last.Kind != sdlstore.KindRejected {
		t.Fatalf("last operation %+v, want set if rejected", last)
	}

	// The subscriber comes up, goes down with its instance, and reconnects.
	cb, next := collector(t)
	must(t, s.SubscribeChannel(c, "obs", cb, "ch"))
	node := e.node("obs")
	node.Kill()
	node.Start()
	deadline := time.Now().Add(10 * time.Second)
	var subs []sdlstore.SubscriberEvent
	for {
		_, more := rec.take()
		subs = append(subs, more...)
		if reconnected(subs, home) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscriber events %+v, want a reconnection", subs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	must(t, s.SetAndPublish(c, "obs", sdlstore.ChannelEvents{"ch": {"x"}}, map[string][]byte{"k": {}}))
	if n := next(); !n.Is("ch", "x") {
		t.Fatalf("got %+v", n)
	}
}

// reconnected reports whether subs has instance's subscriber going down and
// then up again.
func reconnected(subs []sdlstore.SubscriberEvent, instance int) bool {
	down := false
	for _, e := range subs {
		switch {
		case e.Instance != instance:
		case !e.Up:
			down = true
		case down && e.Reconnect:
			return true
		}
	}
	return false
}
