package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

func TestElectionInvalidArguments(t *testing.T) {
	_, f := factory(t)
	ctx := ctxT(t, 5*time.Second)
	if err := f.NewElection("boss").Campaign(ctx, ""); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("Campaign with an empty value = %v, want ErrInvalidArgument", err)
	}
	if err := f.NewElection("").Campaign(ctx, "a"); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("Campaign of an empty name = %v, want ErrInvalidArgument", err)
	}
	if err := f.NewElection("boss").Resign(ctx); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Errorf("Resign before Campaign = %v, want ErrInvalidOperation", err)
	}
}

// TestElectionHandover: the key carries the leader's value, a second
// campaigner waits, and the first one's Resign wakes it through pub/sub
// (its retry delay is far beyond the test's patience).
func TestElectionHandover(t *testing.T) {
	c, f := factory(t, redlock.WithRetryDelay(time.Minute))
	ctx := ctxT(t, 20*time.Second)
	a, b := f.NewElection("boss"), f.NewElection("boss")
	if _, err := a.Leader(ctx); !errors.Is(err, redlock.ErrNoLeader) {
		t.Fatalf("Leader before any campaign = %v, want ErrNoLeader", err)
	}
	if err := a.Campaign(ctx, "host-a"); err != nil {
		t.Fatal(err)
	}
	if err := a.Campaign(ctx, "host-a"); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Fatalf("Campaign while leading = %v, want ErrInvalidOperation", err)
	}
	// Campaign returns at quorum; the third node's SET may still be on its way.
	waitFor(t, 2*time.Second, "a token carrying host-a on every node", func() bool {
		for i := range c.Nodes {
			if !strings.HasSuffix(rawGet(t, c, i, "boss"), "|host-a") {
				return false
			}
		}
		return true
	})
	if v, err := b.Leader(ctx); v != "host-a" || err != nil {
		t.Fatalf("Leader = %q, %v; want host-a", v, err)
	}
	won := make(chan error, 1)
	go func() { won <- b.Campaign(ctx, "host-b") }()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-won:
		t.Fatalf("second campaigner returned %v while the first led", err)
	default:
	}
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-won:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the campaigner was not woken by the resignation")
	}
	<-a.Done()
	if a.Err() != nil {
		t.Fatalf("Err after Resign = %v", a.Err())
	}
	if v, err := a.Leader(ctx); v != "host-b" || err != nil {
		t.Fatalf("Leader = %q, %v; want host-b", v, err)
	}
	b.Resign(ctx)
}

func TestElectionObserve(t *testing.T) {
	_, f := factory(t)
	ctx := ctxT(t, 20*time.Second)
	octx, cancel := context.WithCancel(ctx)
	seen := f.NewElection("observed").Observe(octx)
	next := observed(t, seen)
	next("")
	e := f.NewElection("observed")
	for _, v := range []string{"one", "two"} {
		start := time.Now()
		if err := e.Campaign(ctx, v); err != nil {
			t.Fatal(err)
		}
		next(v)
		t.Logf("%s observed %v after Campaign began", v, time.Since(start))
		if err := e.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		next("")
	}
	cancel()
	for range seen { // closed once ctx ends
	}
}

// observed returns a check that the next value on seen, an Observe
// channel, is want, within 5 s.
func observed(t *testing.T, seen <-chan string) func(want string) {
	return func(want string) {
		t.Helper()
		select {
		case v, ok := <-seen:
			if !ok || v != want {
				t.Fatalf("observed %q (open %v), want %q", v, ok, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("nothing observed, want %q", want)
		}
	}
}

// TestElectionLossClosesDone deletes the leader's key behind its back: the
// next autoextension finds it gone and ends the leadership.
func TestElectionLossClosesDone(t *testing.T) {
	c, f := factory(t, redlock.WithTTL(time.Second))
	ctx := ctxT(t, 10*time.Second)
	e := f.NewElection("fragile")
	if err := e.Campaign(ctx, "me"); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		n.Do("DEL", "fragile")
	}
	select {
	case <-e.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after the key vanished")
	}
	if !errors.Is(e.Err(), redlock.ErrLockLost) {
		t.Fatalf("Err = %v, want ErrLockLost", e.Err())
	}
}

// TestElectionOneLeader runs campaigners that lead briefly and resign, and
// checks that no two lead at once.
func TestElectionOneLeader(t *testing.T) {
	_, f := factory(t, redlock.WithRetryDelay(20*time.Millisecond))
	ctx := ctxT(t, 30*time.Second)
	var leading, most atomic.Int32
	var wg sync.WaitGroup
	for w := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := f.NewElection("single")
			for range 4 {
				if err := e.Campaign(ctx, fmt.Sprint("w", w)); err != nil {
					t.Errorf("campaigner %d: %v", w, err)
					return
				}
				n := leading.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(3 * time.Millisecond)
				leading.Add(-1)
				if err := e.Resign(ctx); err != nil {
					t.Errorf("campaigner %d: resign: %v", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Fatalf("%d leaders at once, want 1", m)
	}
}

// TestElectionFenced: with fencing, each leadership gets a larger token,
// and the key still carries the leader's value.
func TestElectionFenced(t *testing.T) {
	_, f := factory(t, redlock.WithFencing(true))
	ctx := ctxT(t, 10*time.Second)
	e := f.NewElection("epochs")
	var last int64
	for _, v := range []string{"a", "b"} {
		if err := e.Campaign(ctx, v); err != nil {
			t.Fatal(err)
		}
		if e.Fence() <= last {
			t.Fatalf("fence %d after %d", e.Fence(), last)
		}
		last = e.Fence()
		if got, err := e.Leader(ctx); got != v || err != nil {
			t.Fatalf("Leader = %q, %v; want %q", got, err, v)
		}
		e.Resign(ctx)
	}
}

// TestElectionLockerArguments: an invalid election fails every Locker
// call with ErrInvalidArgument, and the calls that need a leadership fail
// before one with ErrInvalidOperation.
func TestElectionLockerArguments(t *testing.T) {
	_, f := factory(t)
	ctx := ctxT(t, 5*time.Second)
	var bad redlock.Locker = f.NewElection("")
	if _, err := bad.Acquire(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("Acquire of an empty name = %v, want ErrInvalidArgument", err)
	}
	if _, err := bad.TryAcquire(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("TryAcquire of an empty name = %v, want ErrInvalidArgument", err)
	}
	if _, err := bad.Extend(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("Extend of an empty name = %v, want ErrInvalidArgument", err)
	}
	if err := bad.Release(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("Release of an empty name = %v, want ErrInvalidArgument", err)
	}
	var e redlock.Locker = f.NewElection("idle")
	if _, err := e.Extend(ctx); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Errorf("Extend before leading = %v, want ErrInvalidOperation", err)
	}
	if err := e.Release(ctx); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Errorf("Release before leading = %v, want ErrInvalidOperation", err)
	}
	if e.Token() != "" || e.Name() != "idle" {
		t.Errorf("before leading: Token %q, Name %q; want \"\", idle", e.Token(), e.Name())
	}
}

// TestElectionAsLocker drives an election through Locker: Acquire with
// no Campaign leads with a random value, which the key and Leader carry;
// a rival's TryAcquire is refused; Release resigns and observers see it;
// the rival's TryAcquire then leads; and Acquire after a Campaign reuses
// the Campaign's value.
func TestElectionAsLocker(t *testing.T) {
	c, f := factory(t, redlock.WithRetryTimes(1), redlock.WithRetryDelay(10*time.Millisecond))
	ctx := ctxT(t, 20*time.Second)
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	seen := f.NewElection("loc").Observe(octx)
	next := observed(t, seen)
	next("")
	ea, eb := f.NewElection("loc"), f.NewElection("loc")
	var a, b redlock.Locker = ea, eb
	v, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v <= 0 {
		t.Fatalf("Acquire's validity %v, want positive", v)
	}
	first := ea.Value()
	if first == "" || !strings.HasSuffix(a.Token(), "|"+first) {
		t.Fatalf("Token %q, Value %q: want RANDOM|VALUE with a non-empty value", a.Token(), first)
	}
	next(first)
	if got, err := eb.Leader(ctx); got != first || err != nil {
		t.Fatalf("Leader = %q, %v; want %q", got, err, first)
	}
	if _, err := a.Acquire(ctx); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Fatalf("Acquire while leading = %v, want ErrInvalidOperation", err)
	}
	if _, err := b.TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire while another leads = %v, want ErrNotAcquired", err)
	}
	if b.Token() != "" {
		t.Fatalf("refused campaigner's Token = %q, want \"\"", b.Token())
	}
	// The refused attempts left no key of their own behind.
	waitFor(t, 2*time.Second, "the leader's token alone on every node", func() bool {
		for i := range c.Nodes {
			if rawGet(t, c, i, "loc") != a.Token() {
				return false
			}
		}
		return true
	})
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	<-a.Done()
	if a.Err() != nil {
		t.Fatalf("Err after Release = %v", a.Err())
	}
	next("")
	if _, err := eb.Leader(ctx); !errors.Is(err, redlock.ErrNoLeader) {
		t.Fatalf("Leader after Release = %v, want ErrNoLeader", err)
	}
	if _, err := b.TryAcquire(ctx); err != nil {
		t.Fatalf("TryAcquire with nobody leading: %v", err)
	}
	second := eb.Value()
	if second == "" || second == first {
		t.Fatalf("second random value %q, first %q: want a fresh one", second, first)
	}
	next(second)
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	next("")
	// A Campaign's value is kept for later acquisitions.
	if err := ea.Campaign(ctx, "chosen"); err != nil {
		t.Fatal(err)
	}
	next("chosen")
	if err := ea.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	next("")
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if ea.Value() != "chosen" || !strings.HasSuffix(a.Token(), "|chosen") {
		t.Fatalf("Acquire after Campaign: Value %q, Token %q; want chosen", ea.Value(), a.Token())
	}
	next("chosen")
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Fatalf("second Release = %v, want ErrInvalidOperation", err)
	}
}

// TestElectionExtend: without autoextension, Extend resets the leader
// key's TTL on every node that holds it; once the key is gone, Extend
// finds the leadership lost and closes Done.
func TestElectionExtend(t *testing.T) {
	c, f := factory(t, redlock.WithTTL(5*time.Second), redlock.WithAutoextend(false))
	ctx := ctxT(t, 10*time.Second)
	e := f.NewElection("ext")
	var l redlock.Locker = e
	if err := e.Campaign(ctx, "me"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "the leader's key on every node", func() bool {
		for i := range c.Nodes {
			if rawGet(t, c, i, "ext") != l.Token() {
				return false
			}
		}
		return true
	})
	for _, n := range c.Nodes {
		n.Do("PEXPIRE", "ext", time.Hour.Milliseconds())
	}
	v, err := l.Extend(ctx)
	if err != nil || v <= 0 {
		t.Fatalf("Extend = %v, %v; want a positive validity", v, err)
	}
	// Extend returns at quorum: the last node's PEXPIRE may still be on its way.
	waitFor(t, 2*time.Second, "the extension to reset the TTL on every node", func() bool {
		for _, n := range c.Nodes {
			if pttl, _ := n.Do("PTTL", "ext").(int64); pttl <= 0 || pttl > 5000 {
				return false
			}
		}
		return true
	})
	select {
	case <-l.Done():
		t.Fatal("Done closed after a successful Extend")
	default:
	}
	for _, n := range c.Nodes {
		n.Do("DEL", "ext")
	}
	if _, err := l.Extend(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Extend with the key gone = %v, want ErrLockLost", err)
	}
	<-l.Done()
	if !errors.Is(l.Err(), redlock.ErrLockLost) {
		t.Fatalf("Err = %v, want ErrLockLost", l.Err())
	}
	if err := l.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Release after the loss = %v, want ErrLockLost", err)
	}
}
