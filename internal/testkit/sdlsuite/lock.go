package sdlsuite

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/sdlstore"
)

func init() {
	cases = append(cases, []testCase{
		{name: "LockLifecycle", instances: both, run: testLockLifecycle},
		{name: "LockExpires", instances: both, run: testLockExpires},
		{name: "LockAcquireCancelled", instances: []int{1}, run: testLockAcquireCancelled},
		{name: "LockExcludesPeers", instances: both, run: testLockExcludesPeers},
	}...)
}

func testLockLifecycle(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	a, err := s.LockResource("ns", "res", 5*time.Second)
	must(t, err)
	b, err := s.LockResource("ns", "res", 5*time.Second)
	must(t, err)
	wantErr(t, a.Release(c), sdlstore.ErrLockNotHeld)
	wantErr(t, a.Refresh(c), sdlstore.ErrLockNotHeld)
	if _, err := a.ValidityTime(c); !errors.Is(err, sdlstore.ErrLockNotHeld) {
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
	for i := range e.addrs {
		ok, _ := redis.Bool(e.do(i, "EXISTS", "{ns},res"), nil)
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
	for i := range e.addrs {
		if ok, _ := redis.Bool(e.do(i, "EXISTS", "{ns},res"), nil); ok {
			t.Fatalf("lock key left on instance %d after Release", i)
		}
	}
	// A Lock can be acquired again after Release.
	if ok, err := a.Acquire(c, 0, 0); !ok || err != nil {
		t.Fatalf("Acquire after Release = %v, %v", ok, err)
	}
	must(t, a.Release(c))
}

func testLockExpires(t *testing.T, e *env) {
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
}

func testLockAcquireCancelled(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	a, _ := s.LockResource("ns", "res", 5*time.Second)
	b, _ := s.LockResource("ns", "res", 5*time.Second)
	if ok, _ := a.Acquire(c, 0, 0); !ok {
		t.Fatal("Acquire failed")
	}
	short, cancel := context.WithTimeout(c, 100*time.Millisecond)
	defer cancel()
	ok, err := b.Acquire(short, 10*time.Millisecond, 10*time.Second)
	if ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled Acquire = %v, %v", ok, err)
	}
	wantErr(t, err, sdlstore.ErrNotConnected)
	must(t, a.Release(c))
}

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

func testLockExcludesPeers(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	home := e.raw(e.home("ns"))
	l, err := s.LockResource("ns", "res", 10*time.Second)
	must(t, err)

	// A peer holds it: ours is refused and touches no instance.
	if !e.peerLock(home, "{ns},res", "peer", 10000) {
		t.Fatal("peer could not take a free lock")
	}
	if ok, err := l.Acquire(c, 0, 0); ok || err != nil {
		t.Fatalf("Acquire while a peer holds the lock = %v, %v", ok, err)
	}
	for i := range e.addrs {
		v, _ := redis.String(e.do(i, "GET", "{ns},res"), nil)
		if want := map[bool]string{true: "peer"}[i == s.InstanceIndex("ns")]; v != want {
			t.Fatalf("instance %d holds %q, want %q", i, v, want)
		}
	}
	// Ours gets it once the peer deletes its key.
	peer := e.raw(e.home("ns"))
	go func() {
		time.Sleep(100 * time.Millisecond)
		peer.Do("DEL", "{ns},res")
	}()
	start := time.Now()
	if ok, err := l.Acquire(c, 10*time.Millisecond, 5*time.Second); !ok || err != nil {
		t.Fatalf("Acquire after the peer released = %v, %v", ok, err)
	}
	if waited := time.Since(start); waited < 80*time.Millisecond {
		t.Fatalf("Acquire succeeded after %v, while the peer still held the lock", waited)
	}

	// Ours holds it: the peer's SET NX fails, and succeeds after Release.
	if e.peerLock(home, "{ns},res", "peer2", 10000) {
		t.Fatal("peer took the lock while sdlstore held it")
	}
	must(t, l.Release(c))
	if !e.peerLock(home, "{ns},res", "peer2", 10000) {
		t.Fatal("peer could not take the lock after Release")
	}
	if ok, err := l.Acquire(c, 0, 0); ok || err != nil {
		t.Fatalf("Acquire while the second peer holds the lock = %v, %v", ok, err)
	}
}
