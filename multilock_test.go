package redlock_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

func TestMultiLockInvalidArguments(t *testing.T) {
	_, f := factory(t)
	ctx := ctxT(t, 5*time.Second)
	for _, names := range [][]string{nil, {}, {"a", ""}, {"a", "b", "a"}} {
		m := f.NewMultiLock(names)
		if _, err := m.Acquire(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("NewMultiLock(%q).Acquire = %v, want ErrInvalidArgument", names, err)
		}
		if err := m.Release(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("NewMultiLock(%q).Release = %v, want ErrInvalidArgument", names, err)
		}
	}
	if _, err := f.NewMultiLock([]string{"a"}, redlock.WithFencing(true)).Acquire(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("fenced MultiLock: %v, want ErrInvalidArgument", err)
	}
}

// TestMultiLockAllOrNone: a name held elsewhere makes the attempt set
// nothing at all; once free, every name is held under one token and
// excludes plain locks and other multi-locks of any of its names.
func TestMultiLockAllOrNone(t *testing.T) {
	c, f := factory(t, redlock.WithRetryTimes(0))
	ctx := ctxT(t, 10*time.Second)
	b := f.NewLock("b")
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	m := f.NewMultiLock([]string{"c", "a", "b"})
	if m.Name() != "a,b,c" {
		t.Fatalf("Name = %q, want a,b,c", m.Name())
	}
	if _, err := m.TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire with b held = %v, want ErrNotAcquired", err)
	}
	for _, key := range []string{"a", "c"} {
		if n := countHolders(t, c, key); n != 0 {
			t.Fatalf("%s set on %d nodes by a refused multi-lock", key, n)
		}
	}
	b.Release(ctx)
	if _, err := m.TryAcquire(ctx); err != nil {
		t.Fatal(err)
	}
	// Acquire returns at quorum; the third node's script may still run.
	waitFor(t, 2*time.Second, "every name with the token on every node", func() bool {
		for _, key := range m.Names() {
			for i := range c.Nodes {
				if rawGet(t, c, i, key) != m.Token() {
					return false
				}
			}
		}
		return true
	})
	if _, err := f.NewLock("c").TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("a Lock of a held name: %v, want ErrNotAcquired", err)
	}
	if _, err := f.NewMultiLock([]string{"c", "d"}).TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("a MultiLock sharing a name: %v, want ErrNotAcquired", err)
	}
	if v, err := m.Extend(ctx); err != nil || v <= 0 {
		t.Fatalf("Extend = %v, %v", v, err)
	}
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, key := range append(m.Names(), "d") {
		if n := countHolders(t, c, key); n != 0 {
			t.Errorf("%s left on %d nodes after Release", key, n)
		}
	}
	if err := m.Release(ctx); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Errorf("second Release = %v, want ErrInvalidOperation", err)
	}
}

// TestMultiLockNodeAllOrNone: a node where one name is taken sets none of
// them, while the other nodes make the quorum.
func TestMultiLockNodeAllOrNone(t *testing.T) {
	c, f := factory(t, redlock.WithRetryTimes(0))
	ctx := ctxT(t, 10*time.Second)
	c.Nodes[0].Do("SET", "y", "someone-else", "PX", 60000)
	m := f.NewMultiLock([]string{"x", "y", "z"})
	if _, err := m.TryAcquire(ctx); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"x", "z"} {
		if v := rawGet(t, c, 0, key); v != "" {
			t.Errorf("node 0 set %s = %q though y was taken there", key, v)
		}
		if n := countHolders(t, c, key); n != 2 {
			t.Errorf("%s held on %d nodes, want 2", key, n)
		}
	}
	m.Release(ctx)
}

// TestMultiLockLossEndsSet deletes one name behind the holder's back: the
// next autoextension loses the whole set and gives up the other names.
func TestMultiLockLossEndsSet(t *testing.T) {
	c, f := factory(t, redlock.WithTTL(time.Second))
	ctx := ctxT(t, 10*time.Second)
	m := f.NewMultiLock([]string{"p", "q"})
	if _, err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		n.Do("DEL", "q")
	}
	select {
	case <-m.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after a name vanished")
	}
	if !errors.Is(m.Err(), redlock.ErrLockLost) {
		t.Fatalf("Err = %v, want ErrLockLost", m.Err())
	}
	waitFor(t, 3*time.Second, "p given up", func() bool { return countHolders(t, c, "p") == 0 })
}

// TestMultiLockWaiterWokenByRelease: a blocked Acquire wakes when one of
// its names is released, though its retry delay is a minute.
func TestMultiLockWaiterWokenByRelease(t *testing.T) {
	_, f := factory(t, redlock.WithRetryDelay(time.Minute))
	ctx := ctxT(t, 20*time.Second)
	held := f.NewLock("k2")
	if _, err := held.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	m := f.NewMultiLock([]string{"k1", "k2"})
	got := make(chan error, 1)
	go func() {
		_, err := m.Acquire(ctx)
		got <- err
	}()
	time.Sleep(300 * time.Millisecond)
	held.Release(ctx)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the multi-lock was not woken by the release")
	}
	m.Release(ctx)
}

// TestMultiLockExcludes runs overlapping multi-locks and plain locks and
// checks that no name is ever held twice.
func TestMultiLockExcludes(t *testing.T) {
	_, f := factory(t, redlock.WithRetryDelay(10*time.Millisecond))
	ctx := ctxT(t, 60*time.Second)
	sets := [][]string{{"r1", "r2"}, {"r2", "r3"}, {"r3", "r1"}, {"r1"}, {"r1", "r2", "r3"}}
	inside := map[string]*atomic.Int32{"r1": {}, "r2": {}, "r3": {}}
	var overlaps atomic.Int32
	var wg sync.WaitGroup
	for w, names := range sets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := f.NewMultiLock(names)
			for range 5 {
				if _, err := m.Acquire(ctx); err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
				for _, n := range names {
					if inside[n].Add(1) > 1 {
						overlaps.Add(1)
					}
				}
				time.Sleep(2 * time.Millisecond)
				for _, n := range names {
					inside[n].Add(-1)
				}
				if err := m.Release(ctx); err != nil {
					t.Errorf("worker %d: release: %v", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("%d overlapping holdings of a name", n)
	}
}
