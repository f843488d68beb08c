package benchkit

import "sync/atomic"

// OverlapChecker counts the times a critical section was entered while
// another holder was still inside it. Call Enter right after a Lock
// succeeds and Exit right before Unlock. It is safe for concurrent use.
type OverlapChecker struct {
	inside   atomic.Int64
	overlaps atomic.Int64
}

// Enter marks one holder as inside; it reports false when another holder
// was already inside, which is an overlap.
func (c *OverlapChecker) Enter() bool {
	if c.inside.Add(1) > 1 {
		c.overlaps.Add(1)
		return false
	}
	return true
}

// Exit marks one holder as gone.
func (c *OverlapChecker) Exit() { c.inside.Add(-1) }

// Overlaps returns the number of overlapping entries so far.
func (c *OverlapChecker) Overlaps() int64 { return c.overlaps.Load() }
