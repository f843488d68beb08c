package fenceclock_test

import (
	"testing"
	"time"

	"github.com/redlockplus/redlock/internal/fenceclock"
	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m, nil) }

// within checks that the clock reads between what time.Now moved by d read
// just before and just after it.
func within(t *testing.T, d time.Duration) {
	t.Helper()
	before := time.Now().Add(d).UnixMicro()
	got := fenceclock.Now()
	after := time.Now().Add(d).UnixMicro()
	if got < before || got > after {
		t.Fatalf("clock skewed by %v reads %d, want within [%d, %d]", d, got, before, after)
	}
}

func TestSkew(t *testing.T) {
	restore := fenceclock.Skew(-time.Hour)
	within(t, -time.Hour)
	restore()
	within(t, 0)
}
