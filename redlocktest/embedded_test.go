package redlocktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/redlocktest"
)

// A factory over embedded nodes runs the whole lock API, with and without
// pipelining and wakeups: two holders exclude each other, extensions and
// releases work, a waiter gets the lock once it is free, and an unextended
// lock expires on the wall clock.
func TestEmbedded(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []redlock.Option
	}{
		{"plain", nil},
		{"pipelined with wakeups", []redlock.Option{redlock.WithPipelining(true), redlock.WithWakeups(true)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pools := redlocktest.Embedded(t, 3)
			if len(pools) != 3 {
				t.Fatalf("Embedded(3) returned %d pools", len(pools))
			}
			opts := append([]redlock.Option{redlock.WithTTL(time.Second), redlock.WithRetryDelay(10 * time.Millisecond)}, tc.opts...)
			f, err := redlock.NewFactory(pools, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			a, b := f.NewLock("job", redlock.WithAutoextend(false)), f.NewLock("job", redlock.WithRetryTimes(0))
			if _, err := a.Acquire(ctx); err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			if _, err := b.TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("second holder: %v, want ErrNotAcquired", err)
			}
			if v, err := a.Extend(ctx); err != nil || v <= 0 {
				t.Fatalf("Extend = %v, %v", v, err)
			}
			if held, times, err := a.CheckTimes(ctx); !held || len(times) != 3 || err != nil {
				t.Fatalf("CheckTimes = %v, %v, %v", held, times, err)
			}
			got := make(chan error, 1)
			go func() { _, err := b.Acquire(ctx); got <- err }()
			time.Sleep(50 * time.Millisecond)
			if err := a.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if err := <-got; err != nil {
				t.Fatalf("waiter after Release: %v", err)
			}
			if err := b.Release(ctx); err != nil {
				t.Fatalf("Release of the waiter: %v", err)
			}
			// Unextended, a lock expires with its TTL.
			short := f.NewLock("short", redlock.WithTTL(100*time.Millisecond), redlock.WithAutoextend(false))
			if _, err := short.Acquire(ctx); err != nil {
				t.Fatalf("Acquire short: %v", err)
			}
			time.Sleep(150 * time.Millisecond)
			if _, err := f.NewLock("short").TryAcquire(ctx); err != nil {
				t.Fatalf("TryAcquire after the TTL ran out: %v", err)
			}
		})
	}
}

// Embedded nodes for a test of code that takes a lock. In a _test.go file
// this is func TestJob(t *testing.T).
func ExampleEmbedded() {
	var t *testing.T // the *testing.T of the test function

	f, err := redlock.NewFactory(redlocktest.Embedded(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = f.Do(context.Background(), "job", func(ctx context.Context) error {
		return nil // the code under test, holding the lock
	})
	if err != nil {
		t.Fatal(err)
	}
}
