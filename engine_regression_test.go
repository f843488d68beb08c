package redlock_test

// Regression tests of defects that the engine refactor is to fix; each
// fails on the code before it (b6ede60).

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/conformance"
	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// TestObserverEveryPrimitive: every primitive reports to the observer the
// events a Lock reports, on the pipelined and on the pool path (the
// goredis and rueidis modules run it over their clients); see
// conformance.ObserverEveryPrimitive for what "the same events" means.
func TestObserverEveryPrimitive(t *testing.T) {
	for _, path := range factoryPaths {
		t.Run(path.name, func(t *testing.T) {
			conformance.ObserverEveryPrimitive(t, conformance.Redigo, redlock.WithPipelining(path.pipelined))
		})
	}
}

// hungNodeGoroutineBound is how many goroutines beyond those running
// before a hung node's first cycle a factory may keep per node: a hung
// node must cost a bounded number of goroutines, whatever the rate of the
// operations (beyond the bound, a bulkhead fails the node fast).
const hungNodeGoroutineBound = 64

// TestPoolHungNodeGoroutineBound runs 2,000 TryAcquire/Release cycles with
// one of 3 nodes paused (SIGSTOP) and a 200 ms node timeout, on both
// paths, and samples runtime.NumGoroutine throughout: the peak must stay
// below the base plus hungNodeGoroutineBound per node. The pipelined path
// meets it; the pool path spends goroutines on every call to the hung
// node, each until its node timeout.
func TestPoolHungNodeGoroutineBound(t *testing.T) {
	for _, path := range factoryPaths {
		t.Run(path.name, func(t *testing.T) {
			c, pools := cluster(t, 3)
			f, err := redlock.NewFactory(pools, redlock.WithPipelining(path.pipelined),
				redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(200*time.Millisecond),
				redlock.WithRetryTimes(0), redlock.WithAutoextend(false))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ctx := ctxT(t, 2*time.Minute)
			l := f.NewLock("hung-node-cycles")
			cycle := func() {
				t.Helper()
				if _, err := l.TryAcquire(ctx); err != nil {
					t.Fatalf("TryAcquire with one node paused: %v", err)
				}
				if err := l.Release(ctx); err != nil {
					t.Fatalf("Release with one node paused: %v", err)
				}
			}
			cycle() // connections and node identities in place
			time.Sleep(100 * time.Millisecond)
			base := runtime.NumGoroutine()
			c.Nodes[2].Pause()
			defer c.Nodes[2].Resume()

			var peak atomic.Int64
			note := func() {
				n := int64(runtime.NumGoroutine())
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
			}
			stop := make(chan struct{})
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				for {
					select {
					case <-stop:
						return
					case <-time.After(time.Millisecond):
						note()
					}
				}
			}()
			const cycles = 2000
			for range cycles {
				cycle()
				note()
			}
			close(stop)
			<-sampled
			bound := base + hungNodeGoroutineBound*len(pools)
			t.Logf("%s: base %d goroutines, peak %d (+%d) over %d cycles, bound %d", path.name, base, peak.Load(), peak.Load()-int64(base), cycles, bound)
			if p := peak.Load(); p >= int64(bound) {
				t.Errorf("goroutines peaked at %d = base %d + %d with one node hung, want below base + %d per node (%d)",
					p, base, p-int64(base), hungNodeGoroutineBound, bound)
			}
		})
	}
}

// TestPoolCloseReleasesAll holds 1,000 locks of one factory on 3 healthy
// nodes and closes it: Close must release every holding, on both paths:
// it returns nil (a quorum confirmed every delete) and no lock key is left
// on any node. (On the pool path Close releases them all at once, a pool
// connection per node and holding, and many releases fail with "context
// deadline exceeded"; some of their keys are left until their TTL.)
func TestPoolCloseReleasesAll(t *testing.T) {
	const holdings = 1000
	for _, path := range factoryPaths {
		t.Run(path.name, func(t *testing.T) {
			c, pools := cluster(t, 3)
			f, err := redlock.NewFactory(pools, redlock.WithPipelining(path.pipelined))
			if err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t, 2*time.Minute)
			var wg sync.WaitGroup
			errs := make(chan error, holdings)
			for g := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := g; i < holdings; i += 8 {
						if _, err := f.NewLock(fmt.Sprintf("close-all:%d", i)).Acquire(ctx); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("Acquire: %v", err)
			}
			// An Acquire returns at quorum: the last node's SET may still
			// be on its way.
			for i := range c.Nodes {
				waitFor(t, 10*time.Second, fmt.Sprintf("node %d to store every lock key", i), func() bool {
					return lockKeys(t, c, i, "close-all:*") == holdings
				})
			}
			if err := f.Close(); err != nil {
				t.Errorf("Close with %d holdings on healthy nodes: %v", holdings, errSummary(err))
			}
			for i := range c.Nodes {
				if n := lockKeys(t, c, i, "close-all:*"); n != 0 {
					t.Errorf("node %d: %d of %d lock keys left after Close", i, n, holdings)
				}
			}
		})
	}
}

// lockKeys counts the keys matching pattern on node i (SCAN).
func lockKeys(t *testing.T, c *redistest.Cluster, i int, pattern string) int {
	t.Helper()
	n := 0
	cursor := "0"
	for {
		v, err := redis.Values(c.Nodes[i].Do("SCAN", cursor, "MATCH", pattern, "COUNT", 1000), nil)
		if err != nil {
			t.Fatalf("SCAN on node %d: %v", i, err)
		}
		keys, _ := redis.Strings(v[1], nil)
		n += len(keys)
		if cursor, _ = redis.String(v[0], nil); cursor == "0" {
			return n
		}
	}
}

// errSummary is err's first line and how many lines it has: Close joins
// one error per failed release.
func errSummary(err error) string {
	if err == nil {
		return "nil"
	}
	lines := strings.Split(err.Error(), "\n")
	return fmt.Sprintf("%d errors, the first: %s", len(lines), lines[0])
}

// TestPoolCloseLeavesNoGoroutines blocks 100 Acquires of a factory with
// wake-ups off on a lock that another client holds, then closes the
// factory: once Close has returned (and the Acquires with it), no
// goroutine of the factory may remain, on either path. The check looks
// at once: a wait would let the pool path's leftovers (redigo reads that
// outlive their command's context) end before it looks.
func TestPoolCloseLeavesNoGoroutines(t *testing.T) {
	const blocked = 100
	for _, path := range factoryPaths {
		t.Run(path.name, func(t *testing.T) {
			c, pools := cluster(t, 3)
			// The holder: another client's key on every node, which it
			// does not release while the test runs.
			for _, nd := range c.Nodes {
				nd.Do("SET", "close-blocked", "another-holder", "PX", 60000)
			}
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(16))
			before := leakcheck.Current()
			f, err := redlock.NewFactory(pools, redlock.WithPipelining(path.pipelined), redlock.WithWakeups(false),
				redlock.WithRetryDelay(0))
			if err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t, time.Minute)
			var wg sync.WaitGroup
			errs := make(chan error, blocked)
			for range blocked {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := f.NewLock("close-blocked").Acquire(ctx)
					errs <- err
				}()
			}
			time.Sleep(500 * time.Millisecond) // every Acquire has made attempts and polls
			// Meanwhile, no command may run in a goroutine that the
			// factory does not count: redigo's DoContext reads in one of
			// its own, which Close cannot wait for.
			for range 50 {
				for _, stack := range allStacks() {
					if strings.Contains(stack, "redis.(*conn).DoContext.func") || strings.Contains(stack, "redis.(*conn).ReceiveContext.func") {
						t.Fatalf("a command runs in a goroutine of redigo's, outside the factory's count:\n%s", stack)
					}
				}
				time.Sleep(4 * time.Millisecond)
			}
			if err := f.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if !errors.Is(err, redlock.ErrClosed) {
					t.Fatalf("blocked Acquire = %v, want ErrClosed", err)
				}
			}
			// A goroutine that has counted itself out of the owner is only
			// returning; any other is a leak, and is looked for at once.
			exiting := func(stack string) bool { return strings.Contains(stack, "redlock.(*owner).release(") }
			if err := leakcheck.FindNewBut(before, 0, exiting); err != nil {
				t.Errorf("after Close returned: %v", err)
			}
		})
	}
}

// allStacks returns the stack of every goroutine.
func allStacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}
