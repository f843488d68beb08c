package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// The wake-up cases make a waiter whose polls are up to four minutes
// apart (its retry delay) wait for a holder whose key lives ten minutes
// without autoextension, so that its pauses, also capped by the key's time
// to live, last a random time up to minutes: without a release
// notification it acquires within its deadline in fewer than one run in
// ten. The deadline leaves room for one split vote: woken by the first
// node's notification, the waiter may reach another node before the
// holder's delete and then pause up to a twentieth of its retry delay
// (12 s).
const (
	wakeRetryDelay = 4 * time.Minute
	wakeHolderTTL  = 10 * time.Minute
	wakeDeadline   = 25 * time.Second
)

// RunWakeups runs the wake-up cases of the suite only, for a client whose
// other behaviour Run covers already.
func RunWakeups(t *testing.T, c Client) {
	t.Run("Wakeup", func(t *testing.T) { wakeup(t, c) })
	t.Run("WakeupAfterKill", func(t *testing.T) { wakeupAfterKill(t, c) })
}

// wakeup: an Acquire blocked on a lock held through another factory is
// woken by the Release over the factory's own subscriber connections, and
// Close closes them.
func wakeup(t *testing.T, c Client) {
	cl, holder, w := blockedWaiter(t, c, "wake")
	subs := subscribers(t, cl, "wake")
	if err := holder.Release(testContext(t)); err != nil {
		t.Fatalf("Release: %v", err)
	}
	w.acquired(t)
	for i, nd := range cl.Nodes {
		if !connected(t, nd, subs[i]) {
			t.Fatalf("node %d: the subscriber connection %s closed before Close", i, subs[i])
		}
	}
	w.closeFactory(t)
	eventually(t, func() error {
		for i, nd := range cl.Nodes {
			if connected(t, nd, subs[i]) {
				return fmt.Errorf("node %d: the subscriber connection %s is open after Close", i, subs[i])
			}
		}
		return nil
	})
}

// wakeupAfterKill: the server kills the subscriber connections of a
// blocked Acquire; the factory opens new ones and subscribes them again,
// and a later Release still wakes the waiter.
func wakeupAfterKill(t *testing.T, c Client) {
	cl, holder, w := blockedWaiter(t, c, "killed")
	old := subscribers(t, cl, "killed")
	for i, nd := range cl.Nodes {
		if n, err := redis.Int64(nd.Do("CLIENT", "KILL", "ID", old[i]), nil); err != nil || n != 1 {
			t.Fatalf("node %d: CLIENT KILL ID %s: %d, %v", i, old[i], n, err)
		}
	}
	subs := subscribers(t, cl, "killed")
	for i := range subs {
		if subs[i] == old[i] {
			t.Fatalf("node %d: subscriber %s survived CLIENT KILL", i, subs[i])
		}
	}
	if err := holder.Release(testContext(t)); err != nil {
		t.Fatalf("Release: %v", err)
	}
	w.acquired(t)
	w.closeFactory(t)
}

// waiter is an Acquire blocked in a goroutine on a factory of its own.
type waiter struct {
	f    *redlock.Factory
	lock *redlock.Lock
	done chan error
}

// blockedWaiter starts three nodes, takes name through one factory of c and
// starts an Acquire of it through another, which waits.
func blockedWaiter(t *testing.T, c Client, name string) (*redistest.Cluster, *redlock.Lock, *waiter) {
	cl := redistest.Start(t, 3)
	ctx := testContext(t)
	holder := c.factory(t, cl.Addrs()).NewLock(name, redlock.WithTTL(wakeHolderTTL), redlock.WithAutoextend(false))
	if _, err := holder.Acquire(ctx); err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	f, err := redlock.NewFactoryFromNodes(c.Nodes(t, cl.Addrs()), redlock.WithRetryDelay(wakeRetryDelay))
	if err != nil {
		t.Fatalf("NewFactoryFromNodes: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	w := &waiter{f: f, lock: f.NewLock(name, redlock.WithRetryTimes(1<<20)), done: make(chan error, 1)}
	wctx, cancel := context.WithTimeout(ctx, wakeDeadline)
	t.Cleanup(cancel)
	go func() {
		_, err := w.lock.Acquire(wctx)
		w.done <- err
	}()
	return cl, holder, w
}

// acquired fails unless the waiter's Acquire succeeded (before its
// deadline), and releases the lock.
func (w *waiter) acquired(t *testing.T) {
	t.Helper()
	if err := <-w.done; err != nil {
		t.Fatalf("Acquire of a released lock, its polls %v apart: %v (not woken by the release)", wakeRetryDelay, err)
	}
	if err := w.lock.Release(testContext(t)); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// closeFactory closes the waiter's factory.
func (w *waiter) closeFactory(t *testing.T) {
	t.Helper()
	if err := w.f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// subscribers waits until every node has one client subscribed to the
// release channel of name and returns each node's subscriber client id.
func subscribers(t *testing.T, cl *redistest.Cluster, name string) []string {
	t.Helper()
	ids := make([]string, len(cl.Nodes))
	eventually(t, func() error {
		for i, nd := range cl.Nodes {
			v, _ := redis.Values(nd.Do("PUBSUB", "NUMSUB", "redlock:released:"+name), nil)
			if len(v) != 2 || v[1] != int64(1) {
				return fmt.Errorf("node %d: PUBSUB NUMSUB of the release channel of %q = %v, want 1", i, name, v[len(v)-1:])
			}
			subs := subscribedClients(t, nd)
			if len(subs) != 1 {
				return fmt.Errorf("node %d: subscribed clients %v, want one", i, subs)
			}
			ids[i] = subs[0]
		}
		return nil
	})
	return ids
}

// subscribedClients returns the ids of the node's clients subscribed to a
// channel, leaving out the loss detector's subscribers (named
// redlock-invalidations-…, on __redis__:invalidate), which are not the
// waker's.
func subscribedClients(t *testing.T, nd *redistest.Node) []string {
	t.Helper()
	var ids []string
	for _, line := range clientList(t, nd) {
		if !strings.Contains(line, " sub=0 ") && !strings.Contains(line, " name=redlock-invalidations-") {
			ids = append(ids, clientID(line))
		}
	}
	return ids
}

// connected reports whether the node has the client id.
func connected(t *testing.T, nd *redistest.Node, id string) bool {
	t.Helper()
	return slices.ContainsFunc(clientList(t, nd), func(line string) bool { return clientID(line) == id })
}

// clientList returns the lines of CLIENT LIST.
func clientList(t *testing.T, nd *redistest.Node) []string {
	t.Helper()
	list, err := redis.String(nd.Do("CLIENT", "LIST"), nil)
	if err != nil {
		t.Fatalf("CLIENT LIST: %v", err)
	}
	return strings.Split(strings.TrimSpace(list), "\n")
}

// clientID returns the id field of a CLIENT LIST line.
func clientID(line string) string {
	id, _, _ := strings.Cut(strings.TrimPrefix(line, "id="), " ")
	return id
}
