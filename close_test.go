package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/delayproxy"
	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// factoryPaths are the two transports of a factory.
var factoryPaths = []struct {
	name      string
	pipelined bool
}{{"pipelined", true}, {"pool", false}}

// slowCluster starts n nodes behind proxies that delay every round trip by
// rtt, and returns the nodes and one pool per proxy.
func slowCluster(t *testing.T, n int, rtt time.Duration) (*redistest.Cluster, []redlock.Pool) {
	t.Helper()
	c := redistest.Start(t, n)
	pools := make([]redlock.Pool, n)
	for i, nd := range c.Nodes {
		px, err := delayproxy.Start(nd.Addr(), rtt)
		if err != nil {
			t.Fatal(err)
		}
		p, err := redlock.NewPool("redis://" + px.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close(); px.Close() })
		pools[i] = p
	}
	return c, pools
}

// TestCloseRacesInFlightAcquires closes a factory while 20 Acquires wait
// for slow nodes: none of them may succeed once Close has begun, each must
// return ErrClosed, Close must not take a TTL, and afterwards no key and no
// goroutine of the factory remains. (Before the owner redesign all 20
// succeeded after Close began, and Close took about one TTL.)
func TestCloseRacesInFlightAcquires(t *testing.T) {
	const (
		rtt         = 150 * time.Millisecond
		nodeTimeout = time.Second
		acquirers   = 20
	)
	for _, path := range factoryPaths {
		t.Run(path.name, func(t *testing.T) {
			c, pools := slowCluster(t, 3, rtt)
			before := leakcheck.Current()
			f, err := redlock.NewFactory(pools, redlock.WithTTL(5*time.Second),
				redlock.WithNodeTimeout(nodeTimeout), redlock.WithPipelining(path.pipelined))
			if err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t, 30*time.Second)
			// One operation first, so that connections and node identities
			// are in place and the Acquires below are in flight, not dialling.
			if _, err := f.Inspect(ctx, "warm-up"); err != nil {
				t.Fatal(err)
			}
			type outcome struct {
				err error
				at  time.Time
			}
			results := make(chan outcome, acquirers)
			for i := range acquirers {
				l := f.NewLock(fmt.Sprintf("inflight-%d", i))
				go func() {
					_, err := l.Acquire(ctx)
					results <- outcome{err, time.Now()}
				}()
			}
			time.Sleep(rtt / 3) // the SETs are on their way, no reply yet
			closeBegan := time.Now()
			if err := f.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			took := time.Since(closeBegan)
			for range acquirers {
				o := <-results
				if o.err == nil && o.at.After(closeBegan) {
					t.Errorf("an Acquire succeeded %v after Close began", o.at.Sub(closeBegan))
				}
				if o.err != nil && !errors.Is(o.err, redlock.ErrClosed) {
					t.Errorf("Acquire = %v, want ErrClosed", o.err)
				}
			}
			t.Logf("Close took %v with %d Acquires in flight (rtt %v, node timeout %v)", took, acquirers, rtt, nodeTimeout)
			if bound := 2*nodeTimeout + 2*rtt; took > bound {
				t.Errorf("Close took %v, more than two node timeouts plus a round trip (%v)", took, bound)
			}
			for i := range acquirers {
				if n := countHolders(t, c, fmt.Sprintf("inflight-%d", i)); n != 0 {
					t.Errorf("inflight-%d: key left on %d nodes after Close", i, n)
				}
			}
			for _, p := range pools {
				p.(interface{ Close() error }).Close()
			}
			if err := leakcheck.FindNew(before, 2*time.Second); err != nil {
				t.Errorf("after Close: %v", err)
			}
		})
	}
}

// TestCloseWithHeldAndBlockedAcquires is the shutdown of a busy service:
// locks held and autoextended, Acquires blocked on them, on slow nodes.
// Close releases the held locks and ends the blocked calls with ErrClosed;
// with -race it also checks that no goroutine is started while Close
// waits.
func TestCloseWithHeldAndBlockedAcquires(t *testing.T) {
	const rtt = 20 * time.Millisecond
	for _, path := range factoryPaths {
		t.Run(path.name, func(t *testing.T) {
			c, pools := slowCluster(t, 3, rtt)
			f, err := redlock.NewFactory(pools, redlock.WithTTL(2*time.Second),
				redlock.WithNodeTimeout(500*time.Millisecond), redlock.WithPipelining(path.pipelined))
			if err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t, 30*time.Second)
			held := make([]*redlock.Lock, 4)
			for i := range held {
				held[i] = f.NewLock(fmt.Sprintf("busy-%d", i))
				if _, err := held[i].Acquire(ctx); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			errs := make(chan error, 4*len(held))
			for i := range 4 * len(held) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := f.NewLock(fmt.Sprintf("busy-%d", i%len(held))).Acquire(ctx)
					errs <- err
				}()
			}
			time.Sleep(300 * time.Millisecond) // every waiter tried and blocked
			if err := f.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if !errors.Is(err, redlock.ErrClosed) || !errors.Is(err, redlock.ErrNotAcquired) {
					t.Errorf("blocked Acquire = %v, want ErrNotAcquired and ErrClosed", err)
				}
			}
			for i, l := range held {
				if !errors.Is(l.Err(), redlock.ErrClosed) {
					t.Errorf("held lock %d: Err = %v, want ErrClosed", i, l.Err())
				}
				if err := l.Release(ctx); !errors.Is(err, redlock.ErrClosed) {
					t.Errorf("Release after Close = %v, want ErrClosed", err)
				}
				if n := countHolders(t, c, l.Name()); n != 0 {
					t.Errorf("%s: key left on %d nodes after Close", l.Name(), n)
				}
			}
			if _, err := f.NewLock("late").Acquire(ctx); !errors.Is(err, redlock.ErrClosed) {
				t.Errorf("Acquire after Close = %v, want ErrClosed", err)
			}
		})
	}
}

// TestDoReleasesWhenFnPanics: the panic goes on, the lock is released, and
// nothing keeps running.
func TestDoReleasesWhenFnPanics(t *testing.T) {
	c, pools := cluster(t, 3)
	before := leakcheck.Current()
	f, err := redlock.NewFactory(pools, redlock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 10*time.Second)
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want the panic of fn", p)
			}
		}()
		_ = f.Do(ctx, "panicky", func(context.Context) error { panic("boom") })
	}()
	// The release returned once a quorum deleted the key; the last node's
	// delete may still be on its way, and must land within a node timeout.
	waitFor(t, time.Second, "the key to be gone from every node after fn panicked", func() bool { return countHolders(t, c, "panicky") == 0 })
	l := f.NewLock("panicky")
	if _, err := l.TryAcquire(ctx); err != nil {
		t.Errorf("the lock is still held after fn panicked: %v", err)
	} else {
		l.Release(ctx)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := leakcheck.FindNew(before, 2*time.Second); err != nil {
		t.Error(err)
	}
}

// TestCloseWhileAcquiresPoll closes a factory while many Acquires poll a
// held lock with a short retry delay, each attempt starting node commands
// in goroutines: under -race, nothing may start while Close waits.
func TestCloseWhileAcquiresPoll(t *testing.T) {
	for _, path := range factoryPaths {
		t.Run(path.name, func(t *testing.T) {
			_, pools := cluster(t, 3)
			f, err := redlock.NewFactory(pools, redlock.WithTTL(2*time.Second), redlock.WithRetryDelay(time.Millisecond),
				redlock.WithWakeups(false), redlock.WithPipelining(path.pipelined))
			if err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t, 30*time.Second)
			if _, err := f.NewLock("polled").Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := f.NewLock("polled").Acquire(ctx); !errors.Is(err, redlock.ErrClosed) {
						t.Errorf("polling Acquire = %v, want ErrClosed", err)
					}
				}()
			}
			time.Sleep(200 * time.Millisecond)
			if err := f.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			wg.Wait()
		})
	}
}
