package redlocktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/redlocktest"
)

// TestExampleFlow runs what ExampleStart shows, on the default backend.
func TestExampleFlow(t *testing.T) {
	c := redlocktest.Start(t, 5)
	f, err := redlock.NewFactory(c.Pools(), redlock.WithTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	c.Kill(0)
	c.Partition(1)
	lock := f.NewLock("orders")
	if _, err := lock.Acquire(context.Background()); err != nil {
		t.Fatalf("3 of 5 nodes are up, yet: %v", err)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Fatal(err)
	}

	c.Partition(2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := f.NewLock("orders").Acquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("acquired without a quorum: %v", err)
	}
	c.Heal(1)
	c.Heal(2)
	c.Restart(0)
	if _, err := lock.Acquire(context.Background()); err != nil {
		t.Fatalf("after healing: %v", err)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}
