package redlock_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

func TestRLockNesting(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	r, err := redlock.NewRLock("nested", pools, redlock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for level := 1; level <= 3; level++ {
		v, err := r.Acquire(ctx)
		if err != nil || v <= 0 {
			t.Fatalf("level %d: validity %v err %v", level, v, err)
		}
		if r.Level() != level {
			t.Fatalf("Level() = %d, want %d", r.Level(), level)
		}
	}
	token := r.Token()
	waitFor(t, 2*time.Second, "the token on every node", func() bool {
		return rawGet(t, c, 0, "nested") == token && rawGet(t, c, 1, "nested") == token && rawGet(t, c, 2, "nested") == token
	})
	for level := 2; level >= 1; level-- {
		if err := r.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if rawGet(t, c, 0, "nested") != token {
			t.Fatalf("inner Release at level %d released the lock on the nodes", level+1)
		}
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "the outer Release to clear every node", func() bool {
		return countHolders(t, c, "nested") == 0
	})
	if err := r.Release(ctx); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Fatalf("Release of an unheld RLock = %v, want ErrInvalidOperation", err)
	}
}

func TestRLockNestedAcquireDetectsLoss(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	r, _ := redlock.NewRLock("gone", pools, redlock.WithTTL(5*time.Second))
	if _, err := r.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		c.Nodes[i].Do("DEL", "gone")
	}
	if _, err := r.Acquire(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("nested Acquire after the keys vanished = %v, want ErrLockLost", err)
	}
	if r.Level() != 1 {
		t.Fatalf("a failed nested Acquire changed the level to %d", r.Level())
	}
	<-r.Done()
	if err := r.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Release of the lost RLock = %v, want ErrLockLost", err)
	}
	if r.Level() != 0 {
		t.Fatalf("level %d after the last Release", r.Level())
	}
	// It can be acquired afresh.
	if _, err := r.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRLockAcquireOrExtend(t *testing.T) {
	_, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	r, _ := redlock.NewRLock("aoe", pools, redlock.WithTTL(5*time.Second))
	for level := 1; level <= 2; level++ {
		if _, err := r.AcquireOrExtend(ctx); err != nil {
			t.Fatal(err)
		}
		if r.Level() != level {
			t.Fatalf("Level = %d, want %d", r.Level(), level)
		}
	}
	r.Release(ctx)
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestLockAcquireOrExtend(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	l, _ := redlock.NewLock("aoe", pools, redlock.WithTTL(5*time.Second), redlock.WithAutoextend(false))
	if _, err := l.AcquireOrExtend(ctx); err != nil {
		t.Fatal(err)
	}
	token := l.Token()
	c.Nodes[0].Do("PEXPIRE", "aoe", 1000)
	v, err := l.AcquireOrExtend(ctx)
	if err != nil || l.Token() != token {
		t.Fatalf("second AcquireOrExtend: %v, token changed %v", err, l.Token() != token)
	}
	// Extend returns at quorum: node 0's PEXPIRE may still be on its way.
	waitFor(t, 2*time.Second, fmt.Sprintf("the extension (validity %v) to reach node 0", v), func() bool {
		pttl, _ := c.Nodes[0].Do("PTTL", "aoe").(int64)
		return pttl > 1000
	})
	// Once the keys are gone, it acquires anew.
	for i := range 3 {
		c.Nodes[i].Do("DEL", "aoe")
	}
	if _, err := l.AcquireOrExtend(ctx); err != nil {
		t.Fatal(err)
	}
	if l.Token() == token {
		t.Fatal("AcquireOrExtend on a lost lock kept the old token")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
