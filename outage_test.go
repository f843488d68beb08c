package redlock_test

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

// TestCleanupBoundedDuringOutage runs 2,000 acquire/release cycles while
// one node hangs (SIGSTOP): every release fails on it, and its deletes must
// wait in the node's bounded queue, not in a goroutine each. Once the node
// answers again, the pending deletes run and no key is left. (The
// goroutines used to grow by about one per cycle.)
func TestCleanupBoundedDuringOutage(t *testing.T) {
	const cycles = 2000
	for _, path := range factoryPaths {
		t.Run(path.name, func(t *testing.T) {
			c, pools := cluster(t, 3)
			nodeTimeout := 50 * time.Millisecond
			f, err := redlock.NewFactory(pools, redlock.WithTTL(30*time.Second), redlock.WithNodeTimeout(nodeTimeout),
				redlock.WithPipelining(path.pipelined), redlock.WithAutoextend(false))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ctx := ctxT(t, 2*time.Minute)
			if _, err := f.Inspect(ctx, "warm-up"); err != nil {
				t.Fatal(err)
			}
			// A held lock starts the loss detector's subscribers, a fixed
			// cost per node like the connections: in the base count.
			warm := f.NewLock("warm-up")
			if _, err := warm.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			if err := warm.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if path.pipelined {
				waitFor(t, 10*time.Second, "the loss detector's subscribers", func() bool {
					for _, n := range c.Nodes {
						if invalidationSubscribers(t, n) == 0 {
							return false
						}
					}
					return true
				})
			}
			base := runtime.NumGoroutine()
			c.Nodes[2].Pause()
			resumed := false
			defer func() {
				if !resumed {
					c.Nodes[2].Resume()
				}
			}()
			peak := 0
			for i := range cycles {
				l := f.NewLock(fmt.Sprintf("storm-%d", i%100))
				if _, err := l.Acquire(ctx); err != nil {
					t.Fatalf("cycle %d: %v", i, err)
				}
				if err := l.Release(ctx); err != nil && !errors.Is(err, redlock.ErrNoQuorum) {
					t.Fatalf("cycle %d: Release: %v", i, err)
				}
				peak = max(peak, runtime.NumGoroutine())
			}
			time.Sleep(3 * nodeTimeout) // the last commands to the hung node time out
			after := runtime.NumGoroutine()
			t.Logf("%d cycles with node 2 hung: goroutines %d before, peak %d, %d after", cycles, base, peak, after)
			// In flight at any moment: a round's commands to the hung node
			// (bounded by the node timeout), one cleanup worker per node,
			// and the subscribers.
			if grown := after - base; grown > 10 {
				t.Errorf("goroutines grew by %d during the outage; background work must be bounded by the node count", grown)
			}
			c.Nodes[2].Resume()
			resumed = true
			waitFor(t, 30*time.Second, "the hung node's pending deletes", func() bool {
				for i := range 100 {
					if rawGet(t, c, 2, fmt.Sprintf("storm-%d", i)) != "" {
						return false
					}
				}
				return true
			})
		})
	}
}

// TestOneServerUnderTwoNames refuses node lists that name one server
// twice: a quorum of them would be one machine.
func TestOneServerUnderTwoNames(t *testing.T) {
	c, _ := cluster(t, 2)
	ctx := ctxT(t, 10*time.Second)
	port := c.Nodes[0].Port
	cases := map[string][]string{
		"localhost and 127.0.0.1": {fmt.Sprintf("redis://localhost:%d", port), fmt.Sprintf("redis://127.0.0.1:%d", port), c.Nodes[1].URL()},
		"databases of one server": {fmt.Sprintf("redis://127.0.0.1:%d/0", port), fmt.Sprintf("redis://127.0.0.1:%d/1", port), fmt.Sprintf("redis://127.0.0.1:%d/2", port)},
	}
	for name, urls := range cases {
		t.Run(name, func(t *testing.T) {
			for _, pipelined := range []bool{true, false} {
				f, err := redlock.NewFactoryFromURLs(urls, redlock.WithPipelining(pipelined))
				if err != nil {
					t.Fatal(err)
				}
				_, err = f.NewLock("twice").Acquire(ctx)
				f.Close()
				if !errors.Is(err, redlock.ErrInvalidArgument) {
					t.Fatalf("pipelined %v: Acquire over %v = %v, want ErrInvalidArgument", pipelined, urls, err)
				}
				t.Logf("pipelined %v: %v", pipelined, err)
				if n := countHolders(t, c, "twice"); n != 0 {
					t.Fatalf("the refused lock left its key on %d nodes", n)
				}
			}
		})
	}
	for _, u := range []string{"redis://127.0.0.1:0", "redis://127.0.0.1:65536", "redis://127.0.0.1:-1", "redis://127.0.0.1:http"} {
		if _, err := redlock.NewPool(u); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("NewPool(%q) = %v, want ErrInvalidArgument", u, err)
		}
	}
}
