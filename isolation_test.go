package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
)

// TestBadKeyDoesNotPoisonExtensionBatch batches the extension of many
// locks, one of whose keys is replaced by a hash: that lock is lost, and
// every other lock of the batch is kept. (A batch used to fail as a whole
// on every node, and unrelated locks were reported lost.)
func TestBadKeyDoesNotPoisonExtensionBatch(t *testing.T) {
	c, f := factory(t, redlock.WithTTL(time.Second))
	ctx := ctxT(t, 20*time.Second)
	locks := make([]*redlock.Lock, 20)
	for i := range locks {
		locks[i] = f.NewLock(fmt.Sprintf("batch-%d", i))
		if _, err := locks[i].Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 { // another program writes a hash where lock 7 lives
		c.Nodes[i].Do("DEL", "batch-7")
		c.Nodes[i].Do("HSET", "batch-7", "field", "value")
	}
	select {
	case <-locks[7].Done():
	case <-time.After(3 * time.Second):
		t.Fatal("the lock whose key became a hash is not reported lost")
	}
	if !errors.Is(locks[7].Err(), redlock.ErrLockLost) {
		t.Fatalf("Err = %v, want ErrLockLost", locks[7].Err())
	}
	time.Sleep(2 * time.Second) // two TTLs of batched extensions
	for i, l := range locks {
		if i != 7 && l.Err() != nil {
			t.Errorf("lock %d lost with the bad key of lock 7 in its batch: %v", i, l.Err())
		}
	}
	for i := range 3 {
		if typ := c.Nodes[i].Do("TYPE", "batch-7"); fmt.Sprint(typ) != "hash" {
			t.Errorf("node %d: the other program's hash was touched (type %v)", i, typ)
		}
	}
}

// TestRLockStartsAtLevelOneAfterLoss: AcquireOrExtend of a lost RLock
// acquires anew, and that holding starts at level 1, so that one Release
// frees the keys. (The count used to survive the loss.)
func TestRLockStartsAtLevelOneAfterLoss(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 20*time.Second)
	r, err := redlock.NewRLock("relevel", pools, redlock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		c.Nodes[i].Do("DEL", "relevel")
	}
	if _, err := r.AcquireOrExtend(ctx); err != nil {
		t.Fatalf("AcquireOrExtend after the loss: %v", err)
	}
	if got := r.Level(); got != 1 {
		t.Fatalf("level after re-acquiring a lost lock = %d, want 1", got)
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Release returns at quorum: the last node's delete may still be on
	// its way.
	waitFor(t, 5*time.Second, "one Release to delete the key on every node", func() bool {
		return countHolders(t, c, "relevel") == 0
	})
}

// TestReleaseWithEndedContext: a Release whose context has already ended
// still deletes the keys and says so. (It used to delete them and return
// ErrNoQuorum "released on 0 of 3".)
func TestReleaseWithEndedContext(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c, pools := cluster(t, 3)
			newLock := tr.lockMaker(t, pools)
			l := newLock("ended-ctx")
			if _, err := l.Acquire(ctxT(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			ended, cancel := context.WithCancel(context.Background())
			cancel()
			if err := l.Release(ended); err != nil {
				t.Fatalf("Release with an ended context = %v, want nil", err)
			}
			// Release returns at quorum: the last node's delete may still be
			// on its way.
			waitFor(t, 2*time.Second, "the key to go from every node", func() bool { return countHolders(t, c, "ended-ctx") == 0 })
		})
	}
}

// TestNoScriptRetryIsOwned flushes the scripts under many pipelined
// operations and closes the factory at once: the EVAL retries run in
// goroutines of the factory, which Close waits for.
func TestNoScriptRetryIsOwned(t *testing.T) {
	c, pools := cluster(t, 3)
	before := leakcheck.Current()
	f, err := redlock.NewFactory(pools, redlock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 20*time.Second)
	locks := make([]*redlock.Lock, 50)
	for i := range locks {
		locks[i] = f.NewLock(fmt.Sprintf("noscript-%d", i), redlock.WithAutoextend(false))
		if _, err := locks[i].Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		c.Nodes[i].Do("SCRIPT", "FLUSH")
	}
	done := make(chan error, len(locks))
	for _, l := range locks {
		go func() { _, err := l.Extend(ctx); done <- err }()
	}
	for range locks {
		if err := <-done; err != nil {
			t.Errorf("Extend after SCRIPT FLUSH: %v", err)
		}
	}
	for i := range 3 {
		c.Nodes[i].Do("SCRIPT", "FLUSH")
	}
	for _, l := range locks {
		go func() { done <- l.Release(ctx) }()
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for range locks {
		<-done
	}
	// Close has joined every goroutine of the factory; redigo's own reader
	// of a closed connection may take a moment more, hence the short wait.
	if err := leakcheck.FindNew(before, time.Second); err != nil && strings.Contains(err.Error(), "redlockplus/redlock.") {
		t.Errorf("after Close: %v", err)
	}
}
