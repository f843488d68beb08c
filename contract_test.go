package redlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

// TestFactoryOptionsOnOneLock: WithPipelining and WithWakeups configure a
// factory; given to one lock they are rejected, not ignored, and NewLock
// and Factory.NewLock report an invalid option the same way.
func TestFactoryOptionsOnOneLock(t *testing.T) {
	_, pools := cluster(t, 3)
	f, err := redlock.NewFactory(pools)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := ctxT(t, 10*time.Second)
	for name, opt := range map[string]redlock.Option{
		"WithPipelining": redlock.WithPipelining(false),
		"WithWakeups":    redlock.WithWakeups(false),
		"a negative TTL": redlock.WithTTL(-time.Second),
	} {
		lone, err := redlock.NewLock("opts", pools, opt)
		if !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("NewLock with %s = %v, want ErrInvalidArgument", name, err)
		}
		fromFactory := f.NewLock("opts", opt)
		_, facErr := fromFactory.Acquire(ctx)
		if !errors.Is(facErr, redlock.ErrInvalidArgument) {
			t.Errorf("Factory.NewLock with %s: Acquire = %v, want ErrInvalidArgument", name, facErr)
		}
		if lone != nil {
			if _, loneErr := lone.Acquire(ctx); loneErr == nil || loneErr.Error() != facErr.Error() {
				t.Errorf("%s: NewLock's lock says %v, Factory.NewLock's says %v", name, loneErr, facErr)
			}
		}
	}
}

// TestCheckTimesReportsLossAlike: the call that finds the lock gone and
// every later call return the same ErrLockLost.
func TestCheckTimesReportsLossAlike(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	l, err := redlock.NewLock("alike", pools, redlock.WithAutoextend(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		c.Nodes[i].Do("DEL", "alike")
	}
	var first error
	for call := range 3 {
		held, times, err := l.CheckTimes(ctx)
		if held || !errors.Is(err, redlock.ErrLockLost) || len(times) != 3 {
			t.Fatalf("CheckTimes call %d after the loss = %v, %v, %v; want false, 3 times, ErrLockLost", call, held, times, err)
		}
		if first == nil {
			first = err
		} else if err.Error() != first.Error() {
			t.Fatalf("CheckTimes call %d says %q, the first said %q", call, err, first)
		}
	}
	if l.Locked(ctx) {
		t.Fatal("Locked after the loss")
	}
}
