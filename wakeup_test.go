package redlock_test

import (
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

// TestWakeupOnRelease: a waiter whose retry delay is 20 s gets the lock
// right after the holder's Release, because it is woken by the release
// notification rather than by its next poll.
func TestWakeupOnRelease(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 30*time.Second)
	holderF, _ := redlock.NewFactory(pools, redlock.WithTTL(30*time.Second))
	defer holderF.Close()
	waiterF, _ := redlock.NewFactory(pools, redlock.WithTTL(30*time.Second), redlock.WithRetryDelay(20*time.Second))
	defer waiterF.Close()

	holder := holderF.NewLock("handoff")
	if _, err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan time.Time, 1)
	go func() {
		w := waiterF.NewLock("handoff")
		if _, err := w.Acquire(ctx); err != nil {
			t.Error(err)
		}
		got <- time.Now()
		w.Release(ctx)
	}()
	waitFor(t, 5*time.Second, "the waiter to subscribe", func() bool {
		n, _ := c.Nodes[0].Do("PUBSUB", "NUMSUB", "redlock:released:handoff").([]any)
		return len(n) == 2 && n[1].(int64) == 1
	})
	time.Sleep(100 * time.Millisecond) // the waiter is now asleep on its long delay
	released := time.Now()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-got:
		t.Logf("handoff took %v", at.Sub(released))
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken by the release (retry delay is 20s)")
	}
}

// TestWakeupFallsBackWhenHolderVanishes: the holder never releases (it
// crashed); the waiter is not woken but gets the lock once the keys expire,
// its pause capped by their remaining time to live.
func TestWakeupFallsBackWhenHolderVanishes(t *testing.T) {
	_, pools := cluster(t, 3)
	ctx := ctxT(t, 30*time.Second)
	crashed, _ := redlock.NewLock("crash", pools, redlock.WithTTL(time.Second), redlock.WithAutoextend(false))
	if _, err := crashed.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	f, _ := redlock.NewFactory(pools, redlock.WithTTL(10*time.Second), redlock.WithRetryDelay(20*time.Second))
	defer f.Close()
	start := time.Now()
	w := f.NewLock("crash")
	if _, err := w.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("acquired %v after the holder vanished (its ttl 1s, retry delay 20s)", took)
	if took > 10*time.Second {
		t.Fatalf("waited %v: the pause was not capped by the key's TTL", took)
	}
	w.Release(ctx)
	<-crashed.Done() // its validity ran out
}

// TestWakeupAfterNodeRestart: the subscriber redials a restarted node and
// subscribes again, so waiters are still woken through it.
func TestWakeupAfterNodeRestart(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 30*time.Second)
	f, _ := redlock.NewFactory(pools, redlock.WithTTL(30*time.Second), redlock.WithRetryDelay(20*time.Second))
	defer f.Close()
	holder, _ := redlock.NewLock("restart", pools, redlock.WithAutoextend(false))
	if _, err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		w := f.NewLock("restart")
		_, err := w.Acquire(ctx)
		if err == nil {
			w.Release(ctx)
		}
		done <- err
	}()
	subscribed := func(i int) func() bool {
		return func() bool {
			n, _ := c.Nodes[i].Do("PUBSUB", "NUMSUB", "redlock:released:restart").([]any)
			return len(n) == 2 && n[1].(int64) == 1
		}
	}
	waitFor(t, 5*time.Second, "the subscription on node 0", subscribed(0))
	c.Nodes[0].Kill()
	c.Nodes[0].Start()
	waitFor(t, 5*time.Second, "the resubscription on the restarted node 0", subscribed(0))
	if err := holder.Release(ctx); err != nil { // node 0 lost the key; 1 and 2 publish
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter not woken after the node restart")
	}
}
