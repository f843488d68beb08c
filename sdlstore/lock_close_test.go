package sdlstore_test

import (
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
	"github.com/redlockplus/redlock/sdlstore"
)

// No work of a lock outlives Release and Store.Close: with an instance
// down, Acquire and Release leave no goroutine retrying deletes on pools the
// caller closes right after Close.
func TestLockWorkEndsWithClose(t *testing.T) {
	c := redistest.Start(t, 3)
	ps := c.Pools()
	pools := []redlock.Pool{ps[0], ps[1], ps[2]}
	s, err := sdlstore.New(pools)
	must(t, err)
	// A namespace whose home instance stays up; another instance is down.
	ns := "leak"
	home := s.InstanceIndex(ns)
	c.Nodes[(home+1)%3].Kill()
	before := leakcheck.Current()
	l, err := s.LockResource(ns, "res", 5*time.Second)
	must(t, err)
	if ok, err := l.Acquire(ctx(t), 0, 0); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	must(t, l.Release(ctx(t)))
	must(t, s.Close())
	for _, p := range ps {
		must(t, p.Close())
	}
	if err := leakcheck.FindNew(before, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}
