package redlock_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

// TestAutoextendKeepsShortLock holds a 2 s lock for 5 s: the autoextender
// must keep it, so Done stays open and a quorum still has the token. (With
// 1 s the extension, due at 750 ms, had under 250 ms of slack, which a
// loaded machine running the race detector sometimes took: the validity
// really ran out.)
func TestAutoextendKeepsShortLock(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 30*time.Second)
	l, _ := redlock.NewLock("keep", pools, redlock.WithTTL(2*time.Second))
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
		t.Fatalf("lock lost while autoextending: %v", l.Err())
	case <-time.After(5 * time.Second):
	}
	if l.Err() != nil {
		t.Fatalf("Err = %v", l.Err())
	}
	held, times, err := l.CheckTimes(ctx)
	if !held || err != nil {
		t.Fatalf("after 5s: held=%v times=%v err=%v", held, times, err)
	}
	for i := range 3 {
		if rawGet(t, c, i, "keep") != l.Token() {
			t.Fatalf("node %d lost the token", i)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAutoextendDetectsLoss deletes the lock's keys on a quorum: the
// autoextender's next extension finds them gone, so Done closes with
// ErrLockLost within one TTL.
func TestAutoextendDetectsLoss(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 30*time.Second)
	const ttl = time.Second
	l, _ := redlock.NewLock("steal", pools, redlock.WithTTL(ttl))
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	// Acquire returns at a quorum: the third SET may still be on its way,
	// and landing after the DEL below it would keep a quorum holding the
	// token. Delete only once every node holds it.
	waitFor(t, 5*time.Second, "every node to hold the token", func() bool { return countHolders(t, c, "steal") == 3 })
	c.Nodes[0].Do("DEL", "steal")
	c.Nodes[1].Do("DEL", "steal")
	deleted := time.Now()
	select {
	case <-l.Done():
	case <-time.After(3 * ttl):
		t.Fatal("loss not detected within 3 TTLs")
	}
	took := time.Since(deleted)
	t.Logf("loss detected %v after the keys were deleted (ttl %v)", took, ttl)
	// One TTL, plus slack for timer scheduling on a loaded machine.
	if took > ttl+250*time.Millisecond {
		t.Fatalf("loss detected after %v, more than one TTL", took)
	}
	if !errors.Is(l.Err(), redlock.ErrLockLost) {
		t.Fatalf("Err = %v, want ErrLockLost", l.Err())
	}
	if _, err := l.Extend(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Extend after loss = %v, want ErrLockLost", err)
	}
	if err := l.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Release after loss = %v, want ErrLockLost", err)
	}
	waitFor(t, 2*time.Second, "the remaining key to be cleaned up", func() bool {
		return rawGet(t, c, 2, "steal") == ""
	})
}

// TestAutoextendRidesOutTransientFailure makes one node refuse connections
// for a while: a quorum is still extendable, so the lock is kept.
func TestAutoextendRidesOutTransientFailure(t *testing.T) {
	_, raw := cluster(t, 3)
	pools, faulty := withFaults(raw)
	ctx := ctxT(t, 30*time.Second)
	l, _ := redlock.NewLock("transient", pools, redlock.WithTTL(500*time.Millisecond))
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	faulty[0].Refuse.Store(true)
	time.Sleep(1500 * time.Millisecond)
	faulty[0].Refuse.Store(false)
	if l.Err() != nil {
		t.Fatalf("lost with one node refusing: %v", l.Err())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestValidityExpiryWithoutAutoextend: a lock that is not extended is
// declared lost when its validity ends.
func TestValidityExpiryWithoutAutoextend(t *testing.T) {
	_, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	l, _ := redlock.NewLock("expire", pools, redlock.WithTTL(300*time.Millisecond), redlock.WithAutoextend(false))
	validity, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	acquired := time.Now()
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after the validity ended")
	}
	if time.Since(acquired) < validity {
		t.Fatalf("Done closed after %v, before the validity %v ended", time.Since(acquired), validity)
	}
	if !errors.Is(l.Err(), redlock.ErrLockLost) {
		t.Fatalf("Err = %v, want ErrLockLost", l.Err())
	}
}

func TestAutoextendTimeoutAndStop(t *testing.T) {
	_, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	l, _ := redlock.NewLock("timeout", pools, redlock.WithTTL(400*time.Millisecond), redlock.WithAutoextendTimeout(500*time.Millisecond))
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	select { // extended once or twice, then left to expire
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("lock still held long after the autoextend timeout")
	}
	if !errors.Is(l.Err(), redlock.ErrLockLost) {
		t.Fatalf("Err = %v", l.Err())
	}

	m, _ := redlock.NewLock("stop", pools, redlock.WithTTL(5*time.Second), redlock.WithAutoextend(false))
	if err := m.StartAutoextend(0); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Fatalf("StartAutoextend before Acquire = %v, want ErrInvalidOperation", err)
	}
	if _, err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.StartAutoextend(-time.Second); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("negative timeout = %v", err)
	}
	if err := m.StartAutoextend(0); err != nil {
		t.Fatal(err)
	}
	m.StopAutoextend()
	m.StopAutoextend() // idempotent
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAutoextendBatches holds 300 locks of one factory with a 1 s TTL for
// 3 s: none is lost, and the extensions reach each node as a few batched
// script calls rather than one call per lock and round.
func TestAutoextendBatches(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 60*time.Second)
	f, _ := redlock.NewFactory(pools, redlock.WithTTL(time.Second))
	defer f.Close()
	const locks = 300
	held := make([]*redlock.Lock, locks)
	for i := range held {
		held[i] = f.NewLock(fmt.Sprintf("batch-%d", i))
		if _, err := held[i].Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	before := scriptCalls(t, c, 0)
	time.Sleep(3 * time.Second)
	calls := scriptCalls(t, c, 0) - before
	for i, l := range held {
		if l.Err() != nil {
			t.Fatalf("lock %d lost: %v", i, l.Err())
		}
	}
	// Unbatched, 3 s at one extension per 0.75 s would be about 4 calls per lock.
	t.Logf("%d locks kept for 3s with %d script calls on node 0", locks, calls)
	if calls > locks {
		t.Fatalf("%d script calls for %d locks: extensions are not batched", calls, locks)
	}
	for _, l := range held {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExpiryOfManyHoldings: a factory's holdings expire each at the end
// of its own validity, whatever order they were taken in, while an
// autoextended lock of the same factory stays held and an extended one
// outlives its first validity.
func TestExpiryOfManyHoldings(t *testing.T) {
	_, f := factory(t)
	ctx := ctxT(t, 20*time.Second)
	kept := f.NewLock("heap:kept", redlock.WithTTL(time.Second))
	if _, err := kept.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	extended := f.NewLock("heap:extended", redlock.WithTTL(400*time.Millisecond), redlock.WithAutoextend(false))
	if _, err := extended.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	type held struct {
		l   *redlock.Lock
		end time.Time // the validity's end as the caller knows it
	}
	var expiring []held
	for _, ms := range []int{900, 300, 1200, 500, 300, 700, 1100, 400} {
		l := f.NewLock(fmt.Sprintf("heap:%d:%d", ms, len(expiring)), redlock.WithTTL(time.Duration(ms)*time.Millisecond), redlock.WithAutoextend(false))
		start := time.Now()
		v, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		expiring = append(expiring, held{l, start.Add(v)})
	}
	v, err := extended.Extend(ctx)
	if err != nil {
		t.Fatal(err)
	}
	extendedEnd := time.Now().Add(v)
	for _, h := range expiring {
		select {
		case <-h.l.Done():
		case <-ctx.Done():
			t.Fatalf("%s: Done not closed after its validity ended", h.l.Name())
		}
		if now := time.Now(); now.Before(h.end) {
			t.Fatalf("%s: Done closed %v before its validity ended", h.l.Name(), h.end.Sub(now))
		}
		if !errors.Is(h.l.Err(), redlock.ErrLockLost) {
			t.Fatalf("%s: Err = %v, want ErrLockLost", h.l.Name(), h.l.Err())
		}
	}
	select {
	case <-extended.Done():
		if now := time.Now(); now.Before(extendedEnd) {
			t.Fatalf("extended lock lost %v before its extended validity ended", extendedEnd.Sub(now))
		}
	case <-ctx.Done():
		t.Fatal("extended lock never expired")
	}
	if err := kept.Err(); err != nil {
		t.Fatalf("autoextended lock: %v", err)
	}
	if err := kept.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
