// Package fenceclock is the clock whose reading a fenced acquisition of
// package redlock proposes as its token, in microseconds. Tests skew it to
// make every acquisition take the write-back round, as a client whose clock
// disagrees with the nodes' does.
package fenceclock

import (
	"sync/atomic"
	"time"
)

var skew atomic.Int64 // nanoseconds

// Now is the client's clock in microseconds, moved by the current skew.
func Now() int64 { return time.Now().Add(time.Duration(skew.Load())).UnixMicro() }

// Skew moves the clock by d for the whole process until restore is called.
func Skew(d time.Duration) (restore func()) {
	old := skew.Swap(int64(d))
	return func() { skew.Store(old) }
}
