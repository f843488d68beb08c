package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// ObserverEveryPrimitive checks that every primitive (Lock, RLock,
// Semaphore, ReadLock, WriteLock, MultiLock, Election) reports to a
// factory's Observer the same events as a Lock does, in five scenarios:
// an uncontended Acquire, Extend, Release, an Acquire blocked by another
// holder until that holder's release (the wait and the wake-up), and a
// loss after FLUSHALL on every node (found by Extend).
//
// "The same events" is, per scenario, the sequence of event kinds the
// subject's observer recorded, in the order they came, equal to Lock's
// sequence of that scenario over the same client and options. A kind is
// AcquireStart, AcquireDone:<outcome>, Waiting:+1 / Waiting:-1,
// ReleaseStart, Released[:closed][:err], Extended:ok|failed[:auto] and
// Lost:<cause>. The per-node events (NodeReply, NodeError) are left out:
// how many there are depends on how many rounds a primitive needs (a
// Semaphore's pass, a writer's intent), not on what it reports. Lock's
// own sequences must hold the events each scenario is about.
//
// Each subject runs on a factory of its own with the observer (loss
// detection off, so that Extend finds the loss on every transport, and
// autoextension off, so that no automatic extension interleaves), and
// its blocker on a second factory without one. opts are given to both
// factories, e.g. WithPipelining(false) for the pool path.
func ObserverEveryPrimitive(t *testing.T, c Client, opts ...redlock.Option) {
	cl := redistest.Start(t, 3)
	var lockSeqs map[string][]string
	for _, p := range observedPrimitives {
		t.Run(p.name, func(t *testing.T) {
			seqs := observeScenarios(t, c, cl, p, opts)
			if p.name == "Lock" {
				checkLockEvents(t, seqs)
				lockSeqs = seqs
				return
			}
			if lockSeqs == nil {
				t.Fatal("Lock's events were not recorded")
			}
			for _, sc := range observerScenarios {
				if got, want := seqs[sc], lockSeqs[sc]; !slices.Equal(got, want) {
					t.Errorf("%s, %s: events %v, Lock's %v", p.name, sc, got, want)
				}
			}
		})
	}
}

// observerScenarios are the scenarios of ObserverEveryPrimitive, in the
// order they run.
var observerScenarios = []string{"acquire", "extend", "release", "wait", "loss"}

// observedPrimitive makes a subject of one primitive kind on f, and the
// holder that blocks it on another factory.
type observedPrimitive struct {
	name    string
	subject func(f *redlock.Factory, opts ...redlock.Option) redlock.Locker
	blocker func(f *redlock.Factory) redlock.Locker
}

var observedPrimitives = []observedPrimitive{
	{"Lock",
		func(f *redlock.Factory, opts ...redlock.Option) redlock.Locker { return f.NewLock("obs:lock", opts...) },
		func(f *redlock.Factory) redlock.Locker { return f.NewLock("obs:lock") }},
	{"RLock",
		func(f *redlock.Factory, opts ...redlock.Option) redlock.Locker {
			return f.NewRLock("obs:rlock", opts...)
		},
		func(f *redlock.Factory) redlock.Locker { return f.NewRLock("obs:rlock") }},
	{"Semaphore",
		func(f *redlock.Factory, opts ...redlock.Option) redlock.Locker {
			return f.NewSemaphore("obs:sem", 1, opts...)
		},
		func(f *redlock.Factory) redlock.Locker { return f.NewSemaphore("obs:sem", 1) }},
	{"ReadLock",
		func(f *redlock.Factory, opts ...redlock.Option) redlock.Locker {
			return f.NewReadLock("obs:rw", opts...)
		},
		func(f *redlock.Factory) redlock.Locker { return f.NewWriteLock("obs:rw") }}, // a writer blocks a reader
	{"WriteLock",
		func(f *redlock.Factory, opts ...redlock.Option) redlock.Locker {
			return f.NewWriteLock("obs:rw2", opts...)
		},
		func(f *redlock.Factory) redlock.Locker { return f.NewWriteLock("obs:rw2") }},
	{"MultiLock",
		func(f *redlock.Factory, opts ...redlock.Option) redlock.Locker {
			return f.NewMultiLock([]string{"obs:m1", "obs:m2"}, opts...)
		},
		func(f *redlock.Factory) redlock.Locker { return f.NewMultiLock([]string{"obs:m1", "obs:m2"}) }},
	{"Election",
		func(f *redlock.Factory, opts ...redlock.Option) redlock.Locker {
			return f.NewElection("obs:elect", opts...)
		},
		func(f *redlock.Factory) redlock.Locker { return f.NewElection("obs:elect") }},
}

// observeScenarios runs the scenarios on one subject of p and returns the
// event kinds its observer recorded in each.
func observeScenarios(t *testing.T, c Client, cl *redistest.Cluster, p observedPrimitive, opts []redlock.Option) map[string][]string {
	ctx := testContext(t)
	rec := &kindRecorder{}
	base := append(slices.Clone(opts), redlock.WithAutoextend(false), redlock.WithLossDetection(false))
	fs := c.factory(t, cl.Addrs(), append(base, redlock.WithObserver(rec.observer()))...)
	fb := c.factory(t, cl.Addrs(), base...)
	s := p.subject(fs)
	b := p.blocker(fb)
	seqs := map[string][]string{}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s %s: %v", p.name, what, err)
		}
	}

	_, err := s.Acquire(ctx)
	must("uncontended Acquire", err)
	seqs["acquire"] = rec.take()
	_, err = s.Extend(ctx)
	must("Extend", err)
	seqs["extend"] = rec.take()
	must("Release", s.Release(ctx))
	seqs["release"] = rec.take()

	// A blocked contender: it waits while the blocker holds, and is woken
	// by the blocker's release.
	_, err = b.Acquire(ctx)
	must("blocker's Acquire", err)
	acquired := make(chan error, 1)
	go func() { _, err := s.Acquire(ctx); acquired <- err }()
	// Release once the subject has reported its wait; a primitive that
	// reports none is given 2 s to be blocked (its events then fail the
	// comparison anyway).
	deadline := time.Now().Add(2 * time.Second)
	for !rec.has("Waiting:+1") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-acquired:
		t.Fatalf("%s: Acquire returned while another holder held the lock: %v", p.name, err)
	default:
	}
	must("blocker's Release", b.Release(ctx))
	must("blocked Acquire", <-acquired)
	seqs["wait"] = rec.take()
	must("Release after the wait", s.Release(ctx))
	rec.take()

	// A loss: every node forgets every key; Extend finds it.
	_, err = s.Acquire(ctx)
	must("Acquire before the flush", err)
	rec.take()
	cl.FlushAll()
	if _, err := s.Extend(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("%s: Extend after FLUSHALL on every node: %v, want ErrLockLost", p.name, err)
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Fatalf("%s: Done not closed after the loss", p.name)
	}
	seqs["loss"] = rec.take()
	return seqs
}

// checkLockEvents fails unless Lock's sequences hold what each scenario
// is about: the reference must not be empty.
func checkLockEvents(t *testing.T, seqs map[string][]string) {
	t.Helper()
	want := map[string][]string{
		"acquire": {"AcquireStart", "AcquireDone:acquired"},
		"extend":  {"Extended:ok"},
		"release": {"ReleaseStart", "Released"},
		"wait":    {"AcquireStart", "Waiting:+1", "Waiting:-1", "AcquireDone:acquired"},
		"loss":    {"Lost:extend_refused"},
	}
	for _, sc := range observerScenarios {
		for _, k := range want[sc] {
			if !slices.Contains(seqs[sc], k) {
				t.Errorf("Lock, %s: events %v lack %s", sc, seqs[sc], k)
			}
		}
	}
}

// kindRecorder is an Observer that records the kinds of the events.
type kindRecorder struct {
	mu    sync.Mutex
	kinds []string
}

func (r *kindRecorder) add(k string) {
	r.mu.Lock()
	r.kinds = append(r.kinds, k)
	r.mu.Unlock()
}

// take returns the kinds so far and forgets them.
func (r *kindRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.kinds
	r.kinds = nil
	return out
}

// has reports whether kind k was recorded since the last take.
func (r *kindRecorder) has(k string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.kinds, k)
}

func (r *kindRecorder) observer() redlock.Observer {
	return redlock.Observer{
		AcquireStart: func(ctx context.Context, _ string) context.Context { r.add("AcquireStart"); return ctx },
		AcquireDone:  func(_ context.Context, e redlock.AcquireEvent) { r.add("AcquireDone:" + e.Outcome.String()) },
		ReleaseStart: func(ctx context.Context, _ string) context.Context { r.add("ReleaseStart"); return ctx },
		Released: func(_ context.Context, e redlock.ReleaseEvent) {
			k := "Released"
			if e.Closed {
				k += ":closed"
			}
			if e.Err != nil {
				k += ":err"
			}
			r.add(k)
		},
		Extended: func(e redlock.ExtendEvent) {
			k := "Extended:ok"
			if !e.OK {
				k = "Extended:failed"
			}
			if e.Auto {
				k += ":auto"
			}
			r.add(k)
		},
		Lost:    func(e redlock.LossEvent) { r.add("Lost:" + e.Cause.String()) },
		Waiting: func(e redlock.WaitingEvent) { r.add(fmt.Sprintf("Waiting:%+d", e.Delta)) },
	}
}
