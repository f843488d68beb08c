package redlock

import (
	"sync/atomic"
	"time"
)

// roundClock lets the rounds of a factory wait for their node timeout
// without a timer each. A round whose limit is far takes the current
// generation, a channel that one goroutine, the sweeper, closes at the
// next tick; woken by it, the round looks at the time left and takes the
// next one, or arms a timer of its own once the limit is less than two
// ticks away (fanout.wait). So a timeout still comes on time, and the
// rounds that decide first, nearly all of them, never touch a timer:
// arming, stopping and selecting on one was about 6 % of the client's CPU
// in a W2 cycle (BENCHMARKS.md, step 14).
//
// The sweeper ticks only while rounds take generations: after a tick in
// which none did, it ends, and the next round to take one starts another.
// (A lone lock's owner never closes, so a sweeper that slept would never
// end.) A round stores used and then reads running; the sweeper stores
// running false and then reads used. Since Go's atomics are sequentially
// consistent, at least one of them sees the other's store: either the
// round starts a sweeper, or the sweeper sees the round and goes on. A
// generation that a round took is therefore closed within about a tick.
type roundClock struct {
	tick time.Duration
	o    *owner
	gen  atomic.Pointer[chan struct{}]
	// used: a round took a generation since the last tick.
	used atomic.Bool
	// running: a sweeper runs, or is being started.
	running atomic.Bool
}

// minRoundTick is the shortest tick of a round clock: a factory whose
// node timeout is below four of them has none, and its rounds arm timers.
const minRoundTick = time.Millisecond

// newRoundClock returns a clock ticking every tick while rounds use it,
// or nil for a tick below minRoundTick.
func newRoundClock(o *owner, tick time.Duration) *roundClock {
	if tick < minRoundTick {
		return nil
	}
	c := &roundClock{tick: tick, o: o}
	g := make(chan struct{})
	c.gen.Store(&g)
	return c
}

// far reports whether a round with left to wait may take a generation:
// the next close comes within a tick, and the one after it too, so a
// round that looks again at each has at least a tick to spare.
func (c *roundClock) far(left time.Duration) bool { return c != nil && left > 2*c.tick }

// take returns the current generation, which is closed at the next tick,
// or a closed channel once the owner is closing. A round that waits on a
// generation does not select on the owner's dying as well (one channel
// less in nearly every wait, BENCHMARKS.md step 20): it looks at dying
// when the generation closes. So no generation taken may stay open once
// the owner dies. The sweeper closes the current one when it sees dying,
// and ends; a generation loaded after that close is one nobody closes,
// but it was made after dying closed, so closing holds at the check.
func (c *roundClock) take() <-chan struct{} {
	g := *c.gen.Load()
	if !c.used.Load() {
		c.used.Store(true)
	}
	if !c.running.Load() && c.running.CompareAndSwap(false, true) && !c.o.spawn(c.sweep) {
		// Refused once the owner is closed: the sweeper before may have
		// ended just now, leaving the generations that other rounds took
		// to this one's.
		c.rotate()
	}
	if c.o.closing() {
		return closedChan
	}
	return g
}

// sweep closes a generation at every tick in which a round took one, and
// ends after a tick in which none did.
func (c *roundClock) sweep() {
	t := time.NewTicker(c.tick)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-c.o.dying:
			c.rotate()
			return // running stays set: no sweeper starts any more
		}
		if c.used.Swap(false) {
			c.rotate()
			continue
		}
		c.running.Store(false)
		if !c.used.Load() || !c.running.CompareAndSwap(false, true) {
			return // idle, or a round started the next sweeper
		}
	}
}

// rotate closes the current generation and starts the next.
func (c *roundClock) rotate() {
	g := make(chan struct{})
	close(*c.gen.Swap(&g))
}
