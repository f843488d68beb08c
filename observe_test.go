package redlock_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

// recorder is an Observer that keeps every event.
type recorder struct {
	mu sync.Mutex
	events
}

// events are the events of a recorder.
type events struct {
	acquires []redlock.AcquireEvent
	releases []redlock.ReleaseEvent
	extends  []redlock.ExtendEvent
	losses   []redlock.LossEvent
	nodeErrs []redlock.NodeErrorEvent
	waiting  []int
	replies  []redlock.NodeReplyEvent
}

func (r *recorder) observer() redlock.Observer {
	return redlock.Observer{
		AcquireDone: func(_ context.Context, e redlock.AcquireEvent) { r.add(func() { r.acquires = append(r.acquires, e) }) },
		Released:    func(_ context.Context, e redlock.ReleaseEvent) { r.add(func() { r.releases = append(r.releases, e) }) },
		Extended:    func(e redlock.ExtendEvent) { r.add(func() { r.extends = append(r.extends, e) }) },
		Lost:        func(e redlock.LossEvent) { r.add(func() { r.losses = append(r.losses, e) }) },
		NodeError:   func(e redlock.NodeErrorEvent) { r.add(func() { r.nodeErrs = append(r.nodeErrs, e) }) },
		Waiting:     func(e redlock.WaitingEvent) { r.add(func() { r.waiting = append(r.waiting, e.Delta) }) },
		NodeReply:   func(_ context.Context, e redlock.NodeReplyEvent) { r.add(func() { r.replies = append(r.replies, e) }) },
	}
}

func (r *recorder) add(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn()
}

// take returns the events so far and forgets them.
func (r *recorder) take() events {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = events{}
	return out
}

// TestObserverEvents runs a scripted scenario on both transports and checks
// every event it must produce: acquisition, contention, a lost script, a
// killed node, a loss and Close.
func TestObserverEvents(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c, pools := cluster(t, 3)
			ctx := ctxT(t, 20*time.Second)
			rec := &recorder{}
			newLock := tr.lockMaker(t, pools)
			opts := []redlock.Option{redlock.WithObserver(rec.observer()), redlock.WithAutoextend(false), redlock.WithRetryDelay(20 * time.Millisecond), redlock.WithRetryTimes(2)}
			a := newLock("obs", opts...)

			// An uncontended acquisition: one attempt, three replies.
			if _, err := a.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			ev := rec.take()
			if len(ev.acquires) != 1 || ev.acquires[0].Outcome != redlock.Acquired || ev.acquires[0].Attempts != 1 || ev.acquires[0].Lock != "obs" {
				t.Fatalf("acquire events %+v, want one acquired in 1 attempt", ev.acquires)
			}
			if len(ev.replies) < 2 || ev.replies[0].Op != "set" || !ev.replies[0].OK {
				t.Fatalf("node replies %+v, want at least a quorum of successful sets", ev.replies)
			}

			// Contention: three refused attempts, one waiter rising and falling.
			b := newLock("obs", opts...)
			if _, err := b.TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("contended TryAcquire: %v", err)
			}
			ev = rec.take()
			if len(ev.acquires) != 1 || ev.acquires[0].Outcome != redlock.Refused || ev.acquires[0].Attempts != 3 {
				t.Fatalf("contended acquire events %+v, want refused after 3 attempts", ev.acquires)
			}
			if len(ev.waiting) != 2 || ev.waiting[0] != 1 || ev.waiting[1] != -1 {
				t.Fatalf("waiting deltas %v, want [1 -1]", ev.waiting)
			}
			if len(ev.nodeErrs) != 0 {
				t.Fatalf("node errors %+v under plain contention", ev.nodeErrs)
			}

			// The caller's context ends while the lock is held elsewhere.
			short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			_, err := b.Acquire(short)
			cancel()
			if ev := rec.take(); err == nil || len(ev.acquires) != 1 || ev.acquires[0].Outcome != redlock.ContextEnded {
				t.Fatalf("acquire with a short context: %v, events %+v", err, ev.acquires)
			}

			// A node that lost the scripts is a node fault; the check
			// still succeeds. CheckTimes waits for every node, so the
			// first one (after which a pool connection knows the node has
			// the script) and the second are complete when they return.
			check := func() events {
				t.Helper()
				if held, _, err := a.CheckTimes(ctx); !held || err != nil {
					t.Fatalf("CheckTimes = %v, %v", held, err)
				}
				return rec.take()
			}
			if ev := check(); len(ev.nodeErrs) != 0 {
				t.Fatalf("node errors %+v before the scripts were flushed", ev.nodeErrs)
			}
			c.Nodes[0].Do("SCRIPT", "FLUSH")
			if ev := check(); len(ev.nodeErrs) != 1 || ev.nodeErrs[0].Kind != redlock.NodeScriptMissing || ev.nodeErrs[0].Node != 0 {
				t.Fatalf("node errors %+v, want node 0's missing script", ev.nodeErrs)
			}
			if _, err := a.Extend(ctx); err != nil {
				t.Fatal(err)
			}
			ev = rec.take()
			if len(ev.extends) != 1 || !ev.extends[0].OK || ev.extends[0].Auto {
				t.Fatalf("extend events %+v, want one ok", ev.extends)
			}

			// A killed node refuses connections (a pipelined connection
			// first sees its end); the lock stays held on two.
			c.Nodes[1].Kill()
			var nodeErrs []redlock.NodeErrorEvent
			waitFor(t, 5*time.Second, "node 1's refused connection", func() bool {
				if held, _, err := a.CheckTimes(ctx); !held || err != nil {
					t.Fatalf("CheckTimes with node 1 down = %v, %v", held, err)
				}
				nodeErrs = append(nodeErrs, rec.take().nodeErrs...)
				return kinds(nodeErrs, 1)[redlock.NodeRefused] > 0
			})
			if k := kinds(nodeErrs, 1); k[redlock.NodeTimeout]+k[redlock.NodeErrorReply]+k[redlock.NodeScriptMissing] > 0 {
				t.Fatalf("node errors %+v, want only node 1's refused or ended connection", nodeErrs)
			}
			if err := a.Release(ctx); err != nil {
				t.Fatal(err)
			}
			ev = rec.take()
			if len(ev.releases) != 1 || ev.releases[0].Err != nil || ev.releases[0].Closed || ev.releases[0].Held <= 0 {
				t.Fatalf("release events %+v, want one ok", ev.releases)
			}

			// A lock whose keys vanish is lost, found by CheckTimes, or
			// first by the loss detection of a pipelined factory.
			if _, err := a.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			c.Nodes[0].Do("DEL", "obs")
			c.Nodes[2].Do("DEL", "obs")
			cause := redlock.LossCheckRefused
			if tr.name == "pipelined" {
				select {
				case <-a.Done():
				case <-ctx.Done():
					t.Fatal("loss detection did not end the lock whose keys vanished")
				}
				cause = redlock.LossDetected
			}
			if _, _, err := a.CheckTimes(ctx); !errors.Is(err, redlock.ErrLockLost) {
				t.Fatalf("CheckTimes after the keys vanished: %v", err)
			}
			// Lost is called just after Done closes, in the goroutine that
			// found the loss: wait for it.
			var losses []redlock.LossEvent
			waitFor(t, 5*time.Second, "the loss event", func() bool {
				losses = append(losses, rec.take().losses...)
				return len(losses) > 0
			})
			if len(losses) != 1 || losses[0].Cause != cause || !errors.Is(losses[0].Err, redlock.ErrLockLost) {
				t.Fatalf("loss events %+v, want one %v", losses, cause)
			}
			if err := a.Release(ctx); !errors.Is(err, redlock.ErrLockLost) || len(rec.take().releases) != 0 {
				t.Fatalf("release of a lost lock: %v; it must report no release", err)
			}
		})
	}
}

// kinds counts node's errors by kind.
func kinds(evs []redlock.NodeErrorEvent, node int) map[redlock.NodeErrorKind]int {
	out := map[redlock.NodeErrorKind]int{}
	for _, e := range evs {
		if e.Node == node {
			out[e.Kind]++
		}
	}
	return out
}

// TestObserverExpiryAndClose checks the loss by expiry and the release by
// Factory.Close.
func TestObserverExpiryAndClose(t *testing.T) {
	_, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	rec := &recorder{}
	f, err := redlock.NewFactory(pools, redlock.WithObserver(rec.observer()), redlock.WithAutoextend(false))
	if err != nil {
		t.Fatal(err)
	}
	short := f.NewLock("short", redlock.WithTTL(100*time.Millisecond))
	if _, err := short.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	<-short.Done()
	kept := f.NewLock("kept")
	if _, err := kept.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	ev := rec.take()
	if len(ev.losses) != 1 || ev.losses[0].Cause != redlock.LossExpired || ev.losses[0].Lock != "short" {
		t.Fatalf("loss events %+v, want short expired", ev.losses)
	}
	if len(ev.releases) != 1 || !ev.releases[0].Closed || ev.releases[0].Lock != "kept" || ev.releases[0].Err != nil {
		t.Fatalf("release events %+v, want kept released by Close", ev.releases)
	}
}

// TestAutoextendObserved checks that autoextension reports its extensions.
func TestAutoextendObserved(t *testing.T) {
	_, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	rec := &recorder{}
	f, err := redlock.NewFactory(pools, redlock.WithObserver(rec.observer()), redlock.WithTTL(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l := f.NewLock("auto")
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "two automatic extensions", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.extends) >= 2
	})
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, e := range rec.take().extends {
		if !e.OK || !e.Auto || e.Lock != "auto" {
			t.Fatalf("extend event %+v, want ok and automatic", e)
		}
	}
}

// TestLoggerAttributes checks that WithLogger logs with the lock, node,
// attempts and waited attributes.
func TestLoggerAttributes(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l, err := redlock.NewLock("logged", pools, redlock.WithLogger(log), redlock.WithAutoextend(false))
	if err != nil {
		t.Fatal(err)
	}
	c.Nodes[2].Kill()
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		`level=DEBUG msg="redlock: acquire acquired" lock=logged attempts=1 waited=`,
		`level=DEBUG msg="redlock: node error" lock=logged node=` + c.Nodes[2].Addr() + ` kind=refused`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestValidityCountsFromReturn checks that the validity every primitive's
// Acquire, and Extend, return counts from their return: a slow observer
// (or anything else between the round's decision and the return) comes
// off it, so that a caller who adds it to the time it read after Acquire never
// counts past the keys' expiry. The deadline can be no later than the TTL
// from before the call, as the keys were set after it.
func TestValidityCountsFromReturn(t *testing.T) {
	_, pools := cluster(t, 3)
	ctx := ctxT(t, 20*time.Second)
	const ttl, slow = 2 * time.Second, 300 * time.Millisecond
	f, err := redlock.NewFactory(pools, redlock.WithTTL(ttl), redlock.WithAutoextend(false),
		redlock.WithObserver(redlock.Observer{
			AcquireDone: func(context.Context, redlock.AcquireEvent) { time.Sleep(slow) },
			Extended:    func(redlock.ExtendEvent) { time.Sleep(slow) },
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	extended := f.NewLock("v:extend")
	if _, err := extended.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	acquires := []struct {
		name    string
		acquire func(context.Context) (time.Duration, error)
	}{
		{"lock", f.NewLock("v:lock").Acquire},
		{"extend", extended.Extend},
		{"rlock", f.NewRLock("v:rlock").Acquire},
		{"read", f.NewReadLock("v:rw").Acquire},
		{"write", f.NewWriteLock("v:rw2").Acquire},
		{"semaphore", f.NewSemaphore("v:sem", 2).Acquire},
		{"multilock", f.NewMultiLock([]string{"v:m1", "v:m2"}).Acquire},
		{"election", f.NewElection("v:leader").Acquire},
	}
	for _, a := range acquires {
		t.Run(a.name, func(t *testing.T) {
			before := time.Now()
			v, err := a.acquire(ctx)
			after := time.Now()
			if err != nil {
				t.Fatal(err)
			}
			if deadline := after.Add(v); deadline.After(before.Add(ttl)) {
				t.Fatalf("Acquire returned %v at %v after the call: the validity ends %v past the TTL from before the call",
					v, after.Sub(before), deadline.Sub(before.Add(ttl)))
			}
			if v <= 0 {
				t.Fatalf("Acquire returned a validity of %v with a TTL of %v", v, ttl)
			}
		})
	}
}
