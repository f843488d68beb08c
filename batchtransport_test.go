package redlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

// countingBatcher is a redigo node that batches: it runs a batch's
// commands one after another on its node, and records how many batches
// were under way at once.
type countingBatcher struct {
	redlock.Node
	now, most *atomic.Int32
}

func (b countingBatcher) DoBatch(ctx context.Context, batch []redlock.Command) {
	n := b.now.Add(1)
	defer b.now.Add(-1)
	for m := b.most.Load(); n > m && !b.most.CompareAndSwap(m, n); m = b.most.Load() {
	}
	time.Sleep(time.Millisecond) // a round trip long enough for others to queue
	for i := range batch {
		c := &batch[i]
		if c.Script != nil {
			c.Reply, c.Err = b.RunScript(ctx, c.Script, c.Keys, c.Args...)
		} else {
			c.Reply, c.Err = b.Do(ctx, c.Name, c.Args...)
		}
	}
}

// TestBatchTransportOneBatchAtATime checks that a node that batches has
// one batch under way at a time, however many lock operations run, so
// that commands reach every node in the order they started: batches under
// way at once travel on different connections, reach the nodes in orders
// of their own and split the nodes between contending attempts, which
// keeps them all out while a minority of nodes is down (failover scenario
// 03).
func TestBatchTransportOneBatchAtATime(t *testing.T) {
	_, pools := cluster(t, 3)
	most := make([]atomic.Int32, len(pools))
	now := make([]atomic.Int32, len(pools))
	nodes := make([]redlock.Node, len(pools))
	for i, p := range pools {
		nodes[i] = countingBatcher{Node: redlock.PoolNode(p), now: &now[i], most: &most[i]}
	}
	f, err := redlock.NewFactoryFromNodes(nodes, redlock.WithRetryTimes(0), redlock.WithAutoextend(false))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	var got atomic.Int64
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			names := []string{"batch:a", "batch:b", "batch:c"}
			for range 20 {
				l := f.NewLock(names[g%len(names)])
				if _, err := l.TryAcquire(ctx); err == nil {
					got.Add(1)
					_ = l.Release(ctx)
				}
			}
		}()
	}
	wg.Wait()
	if got.Load() == 0 {
		t.Fatal("no acquisition")
	}
	for i := range most {
		if m := most[i].Load(); m != 1 {
			t.Errorf("node %d: at most %d batches under way at once, want 1", i, m)
		}
	}
}
