package sdlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/sdlstore"
)

// peerLock takes the lock as ricsdl and sdlgo do: SET NX PX on the
// namespace's home instance only. It reports whether the SET happened.
func (e *env) peerLock(r redis.Conn, key, token string, ms int) bool {
	e.t.Helper()
	v, err := r.Do("SET", key, token, "NX", "PX", ms)
	if err != nil {
		e.t.Fatalf("peer SET NX: %v", err)
	}
	return v != nil
}

// With the home instance down the namespace's lock is unavailable (an
// ErrNotConnected, not a refusal); other instances down do not matter.
func TestLockHomeDown(t *testing.T) {
	e := newEnv(t, 3)
	c, s := ctx(t), e.s
	homeIdx := s.InstanceIndex("ns")
	other := "ns1"
	for s.InstanceIndex(other) == homeIdx {
		other += "x"
	}
	// Every instance but home down: the lock still works.
	for i, n := range e.c.Nodes {
		if i != homeIdx {
			n.Kill()
		}
	}
	l, err := s.LockResource("ns", "res", 5*time.Second)
	must(t, err)
	if ok, err := l.Acquire(c, 0, 0); !ok || err != nil {
		t.Fatalf("Acquire with only home up = %v, %v", ok, err)
	}
	if v, err := l.ValidityTime(c); err != nil || v <= 4*time.Second {
		t.Fatalf("ValidityTime = %v, %v", v, err)
	}
	must(t, l.Refresh(c))
	must(t, l.Release(c))
	// Home down: an error, never "held by someone else".
	lo, err := s.LockResource(other, "res", 5*time.Second)
	must(t, err)
	if ok, err := lo.Acquire(c, 10*time.Millisecond, 100*time.Millisecond); ok || !errorsIs(err, sdlstore.ErrNotConnected) {
		t.Fatalf("Acquire with home down = %v, %v; want ErrNotConnected", ok, err)
	}
	e.c.Nodes[s.InstanceIndex(other)].Start()
	if ok, err := lo.Acquire(c, 0, 0); !ok || err != nil {
		t.Fatalf("Acquire after home came back = %v, %v", ok, err)
	}
	e.node(other).Kill()
	wantErr(t, lo.Refresh(c), sdlstore.ErrNotConnected)
	wantErr(t, lo.Release(c), sdlstore.ErrNotConnected)
}

// A home instance that does not answer makes Acquire fail with
// ErrNotConnected within the caller's deadline, or within the lock's
// expiration when the caller gave none; afterwards the resource is free
// again within one expiration, and a peer still cannot get in while ours
// holds it.
func TestLockHomeSlow(t *testing.T) {
	forInstances(t, func(t *testing.T, e *env) {
		c, s := ctx(t), e.s
		const exp = 300 * time.Millisecond
		l, err := s.LockResource("ns", "res", exp)
		must(t, err)
		home := e.node("ns")
		home.Pause()
		resumed := false
		defer func() {
			if !resumed {
				home.Resume()
			}
		}()
		short, cancel := context.WithTimeout(c, 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		ok, err := l.Acquire(short, 0, 0)
		if ok || !errorsIs(err, sdlstore.ErrNotConnected) {
			t.Fatalf("Acquire on a paused home = %v, %v", ok, err)
		}
		// The caller's deadline, plus the bounded cleanup of the lost reply.
		if d := time.Since(start); d > 100*time.Millisecond+time.Second+500*time.Millisecond {
			t.Fatalf("Acquire on a paused home took %v", d)
		}
		// No deadline from the caller: one attempt lasts at most the expiration.
		start = time.Now()
		ok, err = l.Acquire(c, 0, 0)
		if ok || !errorsIs(err, sdlstore.ErrNotConnected) {
			t.Fatalf("Acquire on a paused home without deadline = %v, %v", ok, err)
		}
		if d := time.Since(start); d < exp || d > exp+time.Second+500*time.Millisecond {
			t.Fatalf("Acquire on a paused home without deadline took %v, want about %v", d, exp)
		}
		home.Resume()
		resumed = true
		// A SET that landed late expires with the expiration.
		r := e.raw(home)
		deadline := time.Now().Add(exp + 2*time.Second)
		for !e.peerLock(r, "{ns},res", "peer", 60000) {
			if time.Now().After(deadline) {
				t.Fatal("the resource stayed locked longer than one expiration after home came back")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if ok, err := l.Acquire(c, 0, 0); ok || err != nil {
			t.Fatalf("Acquire while the peer holds the lock = %v, %v", ok, err)
		}
	})
}
