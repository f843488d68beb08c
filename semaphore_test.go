package redlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

func TestSemaphoreInvalidArguments(t *testing.T) {
	_, f := factory(t)
	ctx := ctxT(t, 5*time.Second)
	for _, tc := range []struct {
		name    string
		permits int
	}{{"jobs", 0}, {"jobs", -3}, {"", 2}} {
		s := f.NewSemaphore(tc.name, tc.permits)
		if _, err := s.Acquire(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("NewSemaphore(%q, %d).Acquire = %v, want ErrInvalidArgument", tc.name, tc.permits, err)
		}
		if err := s.Release(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("NewSemaphore(%q, %d).Release = %v, want ErrInvalidArgument", tc.name, tc.permits, err)
		}
	}
	if _, err := f.NewSemaphore("jobs", 2, redlock.WithFencing(true)).Acquire(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("fenced Semaphore: %v, want ErrInvalidArgument", err)
	}
}

func TestSemaphoreStates(t *testing.T) {
	_, f := factory(t)
	ctx := ctxT(t, 5*time.Second)
	s := f.NewSemaphore("states", 2)
	if err := s.Release(ctx); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Fatalf("Release before Acquire = %v, want ErrInvalidOperation", err)
	}
	if s.Permit() != -1 {
		t.Fatalf("Permit before Acquire = %d, want -1", s.Permit())
	}
	if _, err := s.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Fatalf("second Acquire = %v, want ErrInvalidOperation", err)
	}
	if p := s.Permit(); p != 0 && p != 1 {
		t.Fatalf("Permit = %d, want 0 or 1", p)
	}
	if _, err := s.Extend(ctx); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if err := s.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("Done not closed after Release")
	}
	if s.Err() != nil || s.Permit() != -1 {
		t.Fatalf("after Release: Err %v, Permit %d", s.Err(), s.Permit())
	}
}

// TestSemaphorePermitsAreKeys checks that a holder holds the key of its
// slot on every node, with its token.
func TestSemaphorePermitsAreKeys(t *testing.T) {
	c, f := factory(t)
	ctx := ctxT(t, 5*time.Second)
	s := f.NewSemaphore("keys", 3)
	if _, err := s.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	key := "keys:permit:" + string(rune('0'+s.Permit()))
	holding := func() int {
		n := 0
		for i := range c.Nodes {
			if rawGet(t, c, i, key) == s.Token() {
				n++
			}
		}
		return n
	}
	if n := holding(); n < 2 {
		t.Fatalf("%s holds the token on %d nodes after Acquire, want a quorum of 2", key, n)
	}
	// Acquire returns at quorum: the third SET may still be on its way.
	waitFor(t, 2*time.Second, "the token on every node", func() bool { return holding() == 3 })
	s.Release(ctx)
	if n := countHolders(t, c, key); n != 0 {
		t.Errorf("%s left on %d nodes after Release", key, n)
	}
}

// TestSemaphoreBoundsHolders runs more contenders than permits and checks
// that never more than permits hold at once, and that every permit is used.
func TestSemaphoreBoundsHolders(t *testing.T) {
	_, pools := cluster(t, 3)
	for _, tr := range []struct {
		name string
		opts []redlock.Option
	}{{"pipelined", nil}, {"pool", []redlock.Option{redlock.WithPipelining(false)}}} {
		t.Run(tr.name, func(t *testing.T) {
			f, err := redlock.NewFactory(pools, append(tr.opts, redlock.WithRetryDelay(20*time.Millisecond))...)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ctx := ctxT(t, 30*time.Second)
			const permits, workers, rounds = 3, 8, 6
			var inside, most atomic.Int32
			var used sync.Map
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s := f.NewSemaphore("bounded", permits)
					for range rounds {
						if _, err := s.Acquire(ctx); err != nil {
							t.Errorf("worker %d: %v", w, err)
							return
						}
						used.Store(s.Permit(), true)
						n := inside.Add(1)
						for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
						}
						time.Sleep(5 * time.Millisecond)
						inside.Add(-1)
						if err := s.Release(ctx); err != nil {
							t.Errorf("worker %d: release: %v", w, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			if m := most.Load(); m > permits || m < 2 {
				t.Errorf("at most %d held at once, want 2..%d", m, permits)
			}
			slots := 0
			used.Range(func(k, _ any) bool { slots++; return true })
			if slots != permits {
				t.Errorf("%d distinct permits used, want %d", slots, permits)
			}
		})
	}
}

// TestSemaphoreWaiterWokenByRelease blocks an Acquire behind full permits
// with a retry delay far beyond the test's patience: only the release's
// pub/sub announcement can wake it in time.
func TestSemaphoreWaiterWokenByRelease(t *testing.T) {
	_, f := factory(t, redlock.WithRetryDelay(time.Minute))
	ctx := ctxT(t, 20*time.Second)
	a, b := f.NewSemaphore("wake", 2), f.NewSemaphore("wake", 2)
	for _, s := range []*redlock.Semaphore{a, b} {
		if _, err := s.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waiter := f.NewSemaphore("wake", 2)
	got := make(chan error, 1)
	go func() {
		_, err := waiter.Acquire(ctx)
		got <- err
	}()
	time.Sleep(300 * time.Millisecond) // the waiter fails a pass and subscribes
	select {
	case err := <-got:
		t.Fatalf("Acquire returned %v while both permits were held", err)
	default:
	}
	released := time.Now()
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("woken %v after the release", time.Since(released))
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter was not woken by the release")
	}
	if waiter.Permit() < 0 {
		t.Fatal("the woken waiter holds no permit")
	}
	waiter.Release(ctx)
	a.Release(ctx)
}

func TestSemaphoreTryAcquireFull(t *testing.T) {
	_, f := factory(t, redlock.WithRetryTimes(1), redlock.WithRetryDelay(5*time.Millisecond))
	ctx := ctxT(t, 5*time.Second)
	held := f.NewSemaphore("full", 1)
	if _, err := held.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := f.NewSemaphore("full", 1).TryAcquire(ctx)
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire of a full semaphore = %v, want ErrNotAcquired", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = f.NewSemaphore("full", 1).Acquire(cctx)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire with a short deadline = %v, want ErrNotAcquired and DeadlineExceeded", err)
	}
	held.Release(ctx)
}

func TestSemaphoreClose(t *testing.T) {
	_, pools := cluster(t, 3)
	f, err := redlock.NewFactory(pools)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 5*time.Second)
	s := f.NewSemaphore("closing", 2)
	if _, err := s.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	f.Close()
	<-s.Done()
	if !errors.Is(s.Err(), redlock.ErrClosed) {
		t.Fatalf("Err after Close = %v, want ErrClosed", s.Err())
	}
	if _, err := s.Acquire(ctx); !errors.Is(err, redlock.ErrClosed) {
		t.Fatalf("Acquire after Close = %v, want ErrClosed", err)
	}
}
