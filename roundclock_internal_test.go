package redlock

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redlockplus/redlock/internal/testkit/redistest"
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
	const nodeTimeout = 150 * time.Millisecond // ticks of 37.5 ms, and minStall is 250 ms
	_, f, l := twoFrozenOfThree(t, nodeTimeout)
	defer f.Close()
	before := f.clock.gen.Load()
	start := time.Now()
	_, err := l.TryAcquire(context.Background())
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

// TestRoundClockTakeAfterClose: once Close has begun, take hands out a
// closed generation, also when the sweeper has ended and none may start:
// a round on the clock does not select on dying, and looks at it only
// when its generation closes.
func TestRoundClockTakeAfterClose(t *testing.T) {
	o := newOwner()
	c := newRoundClock(o, time.Hour)
	o.beginClose()
	o.waitAll() // closed: a sweeper may no longer start
	if !closedWithin(c.take(), 10*time.Second) {
		t.Fatal("a generation taken after Close stayed open")
	}
}

// TestRoundOnTheClockEndsAtClose: an attempt that waits on the clock for
// two frozen nodes ends with ErrClosed when Close begins, not with the
// nodes' deadline at the node timeout. (The attempt then discards its key
// and Close cleans up, each waiting for the frozen nodes up to the node
// timeout: the test takes two of them.)
func TestRoundOnTheClockEndsAtClose(t *testing.T) {
	c, f, l := twoFrozenOfThree(t, 2*time.Second) // ticks of 0.5 s
	done := make(chan error, 1)
	go func() {
		_, err := l.TryAcquire(context.Background())
		done <- err
	}()
	for c.Nodes[0].Do("EXISTS", l.Name()) != int64(1) { // the attempt is under way
		time.Sleep(time.Millisecond)
	}
	if err := f.Close(); err != nil {
		t.Logf("Close: %v", err) // the frozen nodes may fail its releases
	}
	err := <-done
	if !errors.Is(err, ErrClosed) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TryAcquire during Close: %v, want ErrClosed and not the nodes' deadline", err)
	}
}

// twoFrozenOfThree returns a factory on three nodes with the given node
// timeout, and a lock of it that has dialled every node, with nodes 1 and
// 2 then frozen until the test ends. The factory has no autoextension, no
// retry and no wake-ups, so that an attempt is one round.
func twoFrozenOfThree(t *testing.T, nodeTimeout time.Duration) (*redistest.Cluster, *Factory, *Lock) {
	t.Helper()
	c, pools := poolsOf(t, 3)
	f, err := NewFactory(pools, WithTTL(30*time.Second), WithNodeTimeout(nodeTimeout), WithAutoextend(false), WithRetryTimes(0), WithWakeups(false))
	if err != nil {
		t.Fatal(err)
	}
	l := f.NewLock("on-the-clock")
	ctx := context.Background()
	if _, err := l.Acquire(ctx); err != nil { // dials every node
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes[1:] {
		n.Pause()
		t.Cleanup(n.Resume)
	}
	return c, f, l
}
