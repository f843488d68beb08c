package redlock_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

// countingBatcher is a redigo node that batches: it runs a batch's
// commands one after another on its node, and records how many batches
// were under way at once and the tokens of the SETs in the order sent.
type countingBatcher struct {
	redlock.Node
	now, most *atomic.Int32
	sets      *[]string // guarded by mu
	mu        *sync.Mutex
}

func (b countingBatcher) DoBatch(ctx context.Context, batch []redlock.Command) {
	b.mu.Lock()
	for _, c := range batch {
		if c.Name == "SET" {
			*b.sets = append(*b.sets, c.Args[1].(string))
		}
	}
	b.mu.Unlock()
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

// TestBatchTransportOneOrder checks that nodes that batch have one batch
// under way at a time and get the attempts' SETs in one order, however
// many lock operations run: batches under way at once travel on different
// connections, and rounds whose starts interleave are queued in different
// orders; either way the nodes reach the contending attempts in orders of
// their own and split between them, which keeps them all out while a
// minority of nodes does not answer (failover scenarios 03 and 11).
func TestBatchTransportOneOrder(t *testing.T) {
	_, pools := cluster(t, 3)
	most := make([]atomic.Int32, len(pools))
	now := make([]atomic.Int32, len(pools))
	sets := make([][]string, len(pools))
	var mu sync.Mutex
	nodes := make([]redlock.Node, len(pools))
	for i, p := range pools {
		nodes[i] = countingBatcher{Node: redlock.PoolNode(p), now: &now[i], most: &most[i], sets: &sets[i], mu: &mu}
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
	// An attempt returns once a quorum answered, so the last batches may
	// still be queued on the slowest node: Close waits for every sender.
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range most {
		if m := most[i].Load(); m != 1 {
			t.Errorf("node %d: at most %d batches under way at once, want 1", i, m)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(sets); i++ {
		if !slices.Equal(sets[i], sets[0]) {
			t.Errorf("node %d got the %d SETs in another order than node 0 (%d SETs)", i, len(sets[i]), len(sets[0]))
		}
	}
}

// lateBatcher is a batching node that runs each batch after delay and
// counts the keys of the cleaners' batched deletes (release_many).
type lateBatcher struct {
	redlock.Node
	delay   time.Duration
	deletes *atomic.Int64
}

func (b lateBatcher) DoBatch(ctx context.Context, batch []redlock.Command) {
	time.Sleep(b.delay)
	for i := range batch {
		c := &batch[i]
		if c.Script != nil {
			if c.Script.Name() == "release_many" {
				b.deletes.Add(int64(len(c.Keys)))
			}
			c.Reply, c.Err = b.RunScript(ctx, c.Script, c.Keys, c.Args...)
		} else {
			c.Reply, c.Err = b.Do(ctx, c.Name, c.Args...)
		}
	}
}

// TestLateSetGetsOneCleanupDelete: on a node that answers after the
// quorum, every uncontended cycle's SET comes too late to be counted, and
// Release leaves its node's cleaner a delete behind it. A SET that
// answered has landed, so one delete is enough; only a SET whose call
// failed may land later and is deleted again (minUncertainTries).
func TestLateSetGetsOneCleanupDelete(t *testing.T) {
	c, pools := cluster(t, 3)
	var deletes [3]atomic.Int64
	nodes := make([]redlock.Node, len(pools))
	for i, p := range pools {
		delay := time.Duration(0)
		if i == 2 {
			delay = 5 * time.Millisecond
		}
		nodes[i] = lateBatcher{Node: redlock.PoolNode(p), delay: delay, deletes: &deletes[i]}
	}
	f, err := redlock.NewFactoryFromNodes(nodes, redlock.WithAutoextend(false))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := ctxT(t, 20*time.Second)
	l := f.NewLock("late-set")
	const cycles = 20
	for range cycles {
		warmUp(t, ctx, l)
	}
	settled(t, c)
	if got := deletes[2].Load(); got < 1 || got > cycles {
		t.Fatalf("the late node's cleaner sent %d deletes in %d cycles, want 1 to %d", got, cycles, cycles)
	}
	if n := c.Nodes[2].Do("EXISTS", "late-set"); n != int64(0) {
		t.Fatalf("EXISTS on the late node = %v: the key was left behind", n)
	}
}
