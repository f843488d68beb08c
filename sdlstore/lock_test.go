package sdlstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/sdlstore"
)

// The lock API behaves the same on one instance and on three: the lock is
// the key on the namespace's home instance.
func TestLockLifecycle(t *testing.T) {
	forInstances(t, func(t *testing.T, e *env) {
		c, s := ctx(t), e.s
		a, err := s.LockResource("ns", "res", 5*time.Second)
		must(t, err)
		b, err := s.LockResource("ns", "res", 5*time.Second)
		must(t, err)
		wantErr(t, a.Release(c), sdlstore.ErrLockNotHeld)
		wantErr(t, a.Refresh(c), sdlstore.ErrLockNotHeld)
		if _, err := a.ValidityTime(c); !errorsIs(err, sdlstore.ErrLockNotHeld) {
			t.Fatalf("ValidityTime before Acquire: %v", err)
		}
		if ok, err := a.Acquire(c, 0, 0); !ok || err != nil {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
		ok, err := a.Acquire(c, 0, 0)
		if ok {
			t.Fatal("second Acquire on a held Lock succeeded")
		}
		wantErr(t, err, sdlstore.ErrRejectedByBackend)
		start := time.Now()
		if ok, err := b.Acquire(c, 20*time.Millisecond, 150*time.Millisecond); ok || err != nil {
			t.Fatalf("contending Acquire = %v, %v", ok, err)
		}
		if waited := time.Since(start); waited < 100*time.Millisecond {
			t.Fatalf("contending Acquire gave up after %v, before its retry timeout", waited)
		}
		v, err := a.ValidityTime(c)
		if err != nil || v <= 4*time.Second || v > 5*time.Second {
			t.Fatalf("ValidityTime = %v, %v", v, err)
		}
		time.Sleep(20 * time.Millisecond)
		must(t, a.Refresh(c))
		if v2, _ := a.ValidityTime(c); v2 <= v-10*time.Millisecond {
			t.Fatalf("Refresh did not extend: %v then %v", v, v2)
		}
		// The key is on the namespace's home instance and nowhere else.
		for i, n := range e.c.Nodes {
			ok, _ := redis.Bool(n.Do("EXISTS", "{ns},res"), nil)
			if home := i == s.InstanceIndex("ns"); ok != home {
				t.Fatalf("lock key on instance %d: %v, want %v (home %d)", i, ok, home, s.InstanceIndex("ns"))
			}
		}
		// A waiter gets the lock once the holder releases it.
		var wg sync.WaitGroup
		wg.Add(1)
		var bOK bool
		var bErr error
		go func() {
			defer wg.Done()
			bOK, bErr = b.Acquire(c, 10*time.Millisecond, 5*time.Second)
		}()
		time.Sleep(50 * time.Millisecond)
		must(t, a.Release(c))
		wg.Wait()
		if !bOK || bErr != nil {
			t.Fatalf("waiting Acquire = %v, %v", bOK, bErr)
		}
		wantErr(t, a.Release(c), sdlstore.ErrLockNotHeld)
		must(t, b.Release(c))
		for _, n := range e.c.Nodes {
			if ok, _ := redis.Bool(n.Do("EXISTS", "{ns},res"), nil); ok {
				t.Fatalf("lock key left on %s after Release", n.Addr())
			}
		}
		// A Lock can be acquired again after Release.
		if ok, err := a.Acquire(c, 0, 0); !ok || err != nil {
			t.Fatalf("Acquire after Release = %v, %v", ok, err)
		}
		must(t, a.Release(c))
	})
}

func TestLockExpires(t *testing.T) {
	forInstances(t, func(t *testing.T, e *env) {
		c, s := ctx(t), e.s
		a, _ := s.LockResource("ns", "short", 100*time.Millisecond)
		b, _ := s.LockResource("ns", "short", 5*time.Second)
		if ok, err := a.Acquire(c, 0, 0); !ok || err != nil {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
		if ok, err := b.Acquire(c, 10*time.Millisecond, 2*time.Second); !ok || err != nil {
			t.Fatalf("Acquire after expiry = %v, %v", ok, err)
		}
		wantErr(t, a.Refresh(c), sdlstore.ErrLockNotHeld)
		wantErr(t, a.Release(c), sdlstore.ErrLockNotHeld)
		must(t, b.Release(c))
	})
}

func TestLockAcquireCancelled(t *testing.T) {
	e := newEnv(t, 1)
	c, s := ctx(t), e.s
	a, _ := s.LockResource("ns", "res", 5*time.Second)
	b, _ := s.LockResource("ns", "res", 5*time.Second)
	if ok, _ := a.Acquire(c, 0, 0); !ok {
		t.Fatal("Acquire failed")
	}
	short, cancel := context.WithTimeout(c, 100*time.Millisecond)
	defer cancel()
	ok, err := b.Acquire(short, 10*time.Millisecond, 10*time.Second)
	if ok || !errorsIs(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled Acquire = %v, %v", ok, err)
	}
	wantErr(t, err, sdlstore.ErrNotConnected)
	must(t, a.Release(c))
}
