package redlock

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// closedWithin reports whether ch is closed within d: a bound on a hang,
// far above the tick, not a measure of speed.
func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// TestRoundClockClosesEveryTakenGeneration: rounds that take generations
// at random moments, often after the sweeper went idle and ended, each see
// theirs closed, and the sweeper ends once nobody takes one. The race
// between a take and the sweeper's end is too narrow to hit here at will:
// model/roundclock.pml checks its every interleaving, and this runs the
// code itself under the race detector.
func TestRoundClockClosesEveryTakenGeneration(t *testing.T) {
	o := newOwner()
	defer o.cancel(ErrClosed)
	c := newRoundClock(o, time.Millisecond)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for i := range 60 {
				if !closedWithin(c.take(), 10*time.Second) {
					t.Errorf("goroutine %d, take %d: the generation was never closed", g, i)
					return
				}
				time.Sleep(time.Duration(rng.IntN(4000)) * time.Microsecond) // 0 to 4 ticks: idle or not
			}
		})
	}
	wg.Wait()
	sweeping := func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.running.n > 0 || c.running.Load()
	}
	deadline := time.Now().Add(10 * time.Second)
	for sweeping() {
		if time.Now().After(deadline) {
			t.Fatal("the sweeper still runs with nobody taking a generation")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRoundClockEndsWithTheOwner: Close closes the generation that a round
// waits on, and the sweeper ends.
func TestRoundClockEndsWithTheOwner(t *testing.T) {
	o := newOwner()
	c := newRoundClock(o, time.Hour)
	g := c.take()
	o.beginClose()
	if !closedWithin(g, 10*time.Second) {
		t.Fatal("the generation stayed open after Close began")
	}
	o.waitAll() // the sweeper is the owner's goroutine
}

// TestRoundWaitsTheNodeTimeoutOnTheClock: an attempt that two frozen nodes
// of three leave without a quorum waits on the factory's clock, not a
// timer, and still gives up at the node timeout, not before, with the
// round's deadline error. The node timeout is below minStall, so that the
// pipelined connections, which drop a hung node after max(node timeout,
// minStall), do not fail the calls first with an i/o timeout (they did
// with a node timeout of minStall's length and above).
func TestRoundWaitsTheNodeTimeoutOnTheClock(t *testing.T) {
	c, pools := poolsOf(t, 3)
	const nodeTimeout = 150 * time.Millisecond // ticks of 37.5 ms, and minStall is 250 ms
	f, err := NewFactory(pools, WithTTL(10*time.Second), WithNodeTimeout(nodeTimeout), WithAutoextend(false), WithRetryTimes(0), WithWakeups(false))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l := f.NewLock("on-the-clock")
	ctx := context.Background()
	if _, err := l.Acquire(ctx); err != nil { // dials every node
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c.Nodes[1].Pause()
	c.Nodes[2].Pause()
	defer c.Nodes[1].Resume()
	defer c.Nodes[2].Resume()
	before := f.clock.gen.Load()
	start := time.Now()
	_, err = l.TryAcquire(ctx)
	waited := time.Since(start)
	if !errors.Is(err, ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TryAcquire with two frozen nodes: %v, want ErrNotAcquired and the nodes' deadline", err)
	}
	if waited < nodeTimeout {
		t.Fatalf("the attempt gave up after %v, before the node timeout %v", waited, nodeTimeout)
	}
	if f.clock.gen.Load() == before { // the sweeper moves on only for a round that took a generation
		t.Fatal("the attempt did not wait on the factory's clock")
	}
}
