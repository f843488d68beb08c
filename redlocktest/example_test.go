package redlocktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/redlocktest"
)

// A failover test of a service that uses redlock: five real nodes, two of
// them lost, and the lock is still acquired. In a _test.go file this is
// func TestFailover(t *testing.T).
func ExampleStart() {
	var t *testing.T // the *testing.T of the test function

	c := redlocktest.Start(t, 5) // Docker if it answers, else redis-server processes
	f, err := redlock.NewFactory(c.Pools(), redlock.WithTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	c.Kill(0)      // crashed: connections refused, keys lost
	c.Partition(1) // unreachable: packets dropped, commands hang
	lock := f.NewLock("orders")
	if _, err := lock.Acquire(context.Background()); err != nil {
		t.Fatalf("3 of 5 nodes are up, yet: %v", err)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Fatal(err)
	}

	c.Partition(2) // now a majority is gone: no lock can be had
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := f.NewLock("orders").Acquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("acquired without a quorum: %v", err)
	}
	c.Heal(1)
	c.Heal(2)
	c.Restart(0) // back, empty, same address
}

// Backends and images are chosen with options, or with the environment
// variables REDLOCKTEST_BACKEND and REDLOCKTEST_IMAGE.
func ExampleWithBackend() {
	var t *testing.T

	c := redlocktest.Start(t, 3,
		redlocktest.WithBackend(redlocktest.BackendDocker),
		redlocktest.WithImage("redis:7"),  // built from the local redis-server when absent
		redlocktest.WithPersistence(true), // appendfsync always: keys survive Kill + Restart
		redlocktest.WithServerArgs("--maxmemory", "64mb"),
	)
	c.Delay(2, 50*time.Millisecond) // every reply of node 2 arrives 50 ms late
	_ = c.URLs()                    // redis://127.0.0.1:port, stable across Restart
}
