package redlock

import "time"

// WithRestartGuard sets the node guard's restart window: a node whose
// Redis process has run for less than window, and that cannot show that it
// kept its data (appendonly yes with appendfsync always), does not vote.
// Its SET may still land, and a release still deletes there, but its yes
// never counts toward a quorum that makes or keeps a holding (an attempt,
// an extension, a fence commit, CheckTimes) until the process has run for
// window. The node's own INFO says when it started, so a client that never
// saw the node before is guarded too.
//
// The default is each lock's TTL, the longest time a key the node lost
// could have counted for a holder. When clients of one lock name use
// different TTLs, give every factory the longest of them. 0 turns the
// guard off; a negative window is an ErrInvalidArgument. A fresh node is a
// restarted one to the guard: start lock nodes a TTL before they are
// needed, or run them durable. Like WithPipelining, it is factory-level.
// See docs/SAFETY.md, "The node guard".
func WithRestartGuard(window time.Duration) Option {
	return func(c *config) {
		c.restartGuard, c.restartGuardSet = window, true
		c.factoryOnlyGiven("WithRestartGuard")
	}
}

// WithClockGuard sets the node guard's clock allowance: a node whose wall
// clock, read with TIME in the vote's own execution, is off this client's
// by more than maxSkew (allowing for the round trip) does not vote in that
// round. Redis expires keys by its wall clock, so a node whose clock
// stepped forward has expired a holder's key early; the guard keeps it out
// on the very next vote, over a connection made before the step too.
//
// The default, and the cap, is half the drift allowance of each lock's TTL
// ((ttl*DriftFactor + 2 ms)/2: 21 ms at a TTL of 4 s); the other half is
// left for the clocks' honest disagreement and the round trip, which
// docs/SAFETY.md states as an assumption. 0 turns the guard off; a
// negative value is an ErrInvalidArgument. Like WithPipelining, it is
// factory-level.
func WithClockGuard(maxSkew time.Duration) Option {
	return func(c *config) {
		c.clockGuard, c.clockGuardSet = maxSkew, true
		c.factoryOnlyGiven("WithClockGuard")
	}
}

// restartWindow is the restart guard's window for a lock of c.
func (c *config) restartWindow() time.Duration {
	if !c.restartGuardSet {
		return c.ttl
	}
	return c.restartGuard
}

// clockAllowance is the clock guard's allowance for a lock of c.
func (c *config) clockAllowance() time.Duration {
	half := c.drift() / 2
	if !c.clockGuardSet {
		return half
	}
	return min(c.clockGuard, half)
}

// validateGuard checks the guard's options.
func (c *config) validateGuard() error {
	if c.restartGuard < 0 {
		return invalidArg("restart guard window %v is negative (0 turns the guard off)", c.restartGuard)
	}
	if c.clockGuard < 0 {
		return invalidArg("clock guard allowance %v is negative (0 turns the guard off)", c.clockGuard)
	}
	return nil
}
