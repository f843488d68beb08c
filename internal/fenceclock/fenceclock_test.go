package fenceclock_test

import (
	"testing"
	"time"

	"github.com/redlockplus/redlock/internal/fenceclock"
	"github.com/redlockplus/redlock/internal/leakcheck"
)

func TestSkew(t *testing.T) {
	restore := fenceclock.Skew(-time.Hour)
	behind := time.Now().UnixMicro() - fenceclock.Now()
	restore()
	if behind < time.Hour.Microseconds() {
		t.Fatalf("skewed clock is %d µs behind, want an hour", behind)
	}
	if d := fenceclock.Now() - time.Now().UnixMicro(); d > 0 {
		t.Fatalf("restored clock is %d µs ahead", d)
	}
}

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m, nil) }
