package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// Run runs the whole suite against c, each case on nodes of its own. Its
// Processes cases run the test that calls Run again as child processes,
// where Run plays one contender instead (processChild); with a client
// other than Redigo, ProcessesWithRedigo mixes children of both clients.
func Run(t *testing.T, c Client) {
	if isChild() {
		processChild(t, c)
		return
	}
	test := t.Name()
	cases := []testCase{
		{"NodeContract", nodeContract},
		{"RepeatedNodes", repeatedNodes},
		{"MutualExclusion", mutualExclusion},
		{"Processes", func(t *testing.T, c Client) { processes(t, test, c, c, c) }},
		{"QuorumMasks", quorumMasks},
		{"HungNode", hungNode},
		{"ContestedAttempt", contestedAttempt},
		{"LossDetection", lossDetection},
		{"RLock", rlock},
		{"Do", do},
		{"Cancellation", cancellation},
		{"NoScript", noScript},
		{"CloseWithAcquires", closeWithAcquires},
		{"Wakeup", wakeup},
		{"WakeupAfterKill", wakeupAfterKill},
	}
	if c.Name != Redigo.Name {
		cases = append(cases, testCase{"ProcessesWithRedigo", func(t *testing.T, c Client) { processes(t, test, c, Redigo, c, Redigo) }})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, c) })
	}
}

// testCase is one case of Run.
type testCase struct {
	name string
	fn   func(t *testing.T, c Client)
}

// Interop checks that a lock held through a excludes the same name through
// b, and that b takes it once a releases it: the same keys, tokens and
// scripts on every client.
func Interop(t *testing.T, a, b Client) {
	cl := redistest.Start(t, 3)
	ctx := testContext(t)
	la := a.factory(t, cl.Addrs()).NewLock("interop")
	lb := b.factory(t, cl.Addrs()).NewLock("interop", redlock.WithRetryTimes(0))
	if _, err := la.Acquire(ctx); err != nil {
		t.Fatalf("%s: Acquire: %v", a.Name, err)
	}
	if _, err := lb.TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("%s: TryAcquire of a lock held through %s: %v, want ErrNotAcquired", b.Name, a.Name, err)
	}
	if held, _, err := lb.CheckTimes(ctx); err == nil || held {
		t.Fatalf("%s: CheckTimes of another holder's lock: held %v, err %v", b.Name, held, err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatalf("%s: Release: %v", a.Name, err)
	}
	if _, err := lb.TryAcquire(ctx); err != nil {
		t.Fatalf("%s: TryAcquire after %s released: %v", b.Name, a.Name, err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatalf("%s: Release: %v", b.Name, err)
	}
	assertFree(t, cl, "interop")
}

// testContext bounds a case, so that a hang fails it instead of the run.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// holders counts the nodes that store the key name.
func holders(cl *redistest.Cluster, name string) int {
	n := 0
	for _, nd := range cl.Nodes {
		if nd.Do("EXISTS", name).(int64) == 1 {
			n++
		}
	}
	return n
}

// waitHolders waits until want nodes store the key name; see eventually.
func waitHolders(t *testing.T, cl *redistest.Cluster, name string, want int) {
	t.Helper()
	eventually(t, func() error {
		if n := holders(cl, name); n != want {
			return fmt.Errorf("lock %q: %d nodes store its key, want %d", name, n, want)
		}
		return nil
	})
}

// assertFree fails unless no node stores the key name (soon).
func assertFree(t *testing.T, cl *redistest.Cluster, name string) {
	t.Helper()
	waitHolders(t, cl, name, 0)
}

// nodeContract checks the node's replies against the forms of the
// redlock.Node contract.
func nodeContract(t *testing.T, c Client) {
	cl := redistest.Start(t, 1)
	ctx := testContext(t)
	n := c.Nodes(t, cl.Addrs())[0]
	if n.Addr() != cl.Nodes[0].Addr() {
		t.Errorf("Addr() = %q, want %q", n.Addr(), cl.Nodes[0].Addr())
	}
	if v, err := n.Do(ctx, "SET", "k", "v", "NX", "PX", int64(10000)); err != nil || v == nil {
		t.Fatalf("SET NX of a free key: %v, %v", v, err)
	}
	if v, err := n.Do(ctx, "SET", "k", "v", "NX", "PX", 10000); err != nil || v != nil {
		t.Fatalf("SET NX of a held key: %#v, %v; want nil, nil", v, err)
	}
	if v, err := n.Do(ctx, "PTTL", "k"); err != nil || asInt(v) <= 0 {
		t.Fatalf("PTTL: %#v, %v; want a positive int64", v, err)
	}
	var re redlock.ReplyError
	if _, err := n.Do(ctx, "INCR", "k"); !errors.As(err, &re) {
		t.Fatalf("INCR of a string: %v, want a ReplyError", err)
	}
	if v, err := n.Do(ctx, "INFO", "server"); err != nil || len(asString(v)) == 0 {
		t.Fatalf("INFO server: %#v, %v", v, err)
	}
	release := scriptNamed(t, "release")
	cl.Nodes[0].Do("SET", "k1", "t1")
	cl.Nodes[0].Do("SCRIPT", "FLUSH")
	if v, err := n.RunScript(ctx, release, []string{"k1"}, "other"); err != nil || asInt(v) != 0 {
		t.Fatalf("RunScript after SCRIPT FLUSH, another token: %#v, %v; want 0", v, err)
	}
	if v, err := n.RunScript(ctx, release, []string{"k1"}, "t1"); err != nil || asInt(v) != 1 {
		t.Fatalf("RunScript, the key's token: %#v, %v; want 1", v, err)
	}
	if b, ok := n.(redlock.Batcher); ok {
		batchContract(t, cl, b, release)
	}
}

// batchContract runs a batch of scripts the node does not know, with
// plain commands.
func batchContract(t *testing.T, cl *redistest.Cluster, b redlock.Batcher, release *redlock.Script) {
	ctx := testContext(t)
	cl.Nodes[0].Do("SET", "k2", "t2")
	cl.Nodes[0].Do("SCRIPT", "FLUSH")
	batch := []redlock.Command{
		{Script: release, Keys: []string{"k2"}, Args: []any{"t2"}},
		{Script: release, Keys: []string{"k4"}, Args: []any{"t4"}},
		{Name: "SET", Args: []any{"k3", "t3", "NX", "PX", int64(10000)}},
		{Name: "GET", Args: []any{"k5"}},
	}
	b.DoBatch(ctx, batch)
	for i, want := range []any{int64(1), int64(0), "OK", nil} {
		got, err := batch[i].Reply, batch[i].Err
		if s, ok := got.([]byte); ok {
			got = string(s)
		}
		if err != nil || got != want {
			t.Errorf("batch command %d: %#v, %v; want %#v", i, got, err, want)
		}
	}
}

// scriptNamed returns the lock script called name.
func scriptNamed(t *testing.T, name string) *redlock.Script {
	for _, s := range redlock.Scripts() {
		if s.Name() == name {
			return s
		}
	}
	t.Fatalf("no lock script %q", name)
	return nil
}

// asInt reads an integer reply of the contract.
func asInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

// asString reads a string reply of the contract.
func asString(v any) string {
	s, _ := redis.String(v, nil)
	return s
}

// repeatedNodes checks that a node given twice is refused at once, and two
// nodes of one server at the first operation.
func repeatedNodes(t *testing.T, c Client) {
	cl := redistest.Start(t, 3)
	nodes := c.Nodes(t, cl.Addrs())
	if _, err := redlock.NewFactoryFromNodes([]redlock.Node{nodes[0], nodes[1], nodes[0]}); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("a node given twice: %v, want ErrInvalidArgument", err)
	}
	if _, err := redlock.NewFactoryFromNodes([]redlock.Node{nodes[0], nil, nodes[2]}); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("a nil node: %v, want ErrInvalidArgument", err)
	}
	var short *redlock.InsufficientNodesError
	if _, err := redlock.NewFactoryFromNodes(nodes[:2]); !errors.As(err, &short) {
		t.Fatalf("two nodes: %v, want an InsufficientNodesError", err)
	}
	// The first operation identifies a quorum of the nodes; the others are
	// asked in the background, at most once per second.
	l := c.factory(t, []string{cl.Addrs()[0], cl.Addrs()[1], cl.Addrs()[0]}).NewLock("same", redlock.WithAutoextend(false))
	ctx := testContext(t)
	for deadline := time.Now().Add(5 * time.Second); ; {
		_, err := l.TryAcquire(ctx)
		if errors.Is(err, redlock.ErrInvalidArgument) {
			break
		}
		if err == nil {
			_ = l.Release(ctx)
		}
		if time.Now().After(deadline) {
			t.Fatalf("two clients of one server: %v, want ErrInvalidArgument", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mutualExclusion runs contending holders in several factories (as
// several processes would) and fails on any overlap.
func mutualExclusion(t *testing.T, c Client) {
	cl := redistest.Start(t, 3)
	ctx := testContext(t)
	const factories, perFactory, rounds = 3, 3, 15
	var inside, overlaps, done atomic.Int64
	var wg sync.WaitGroup
	for range factories {
		f := c.factory(t, cl.Addrs(), redlock.WithRetryDelay(5*time.Millisecond), redlock.WithRetryTimes(1<<20))
		for range perFactory {
			wg.Go(func() {
				l := f.NewLock("mutex")
				for range rounds {
					if _, err := l.Acquire(ctx); err != nil {
						t.Errorf("Acquire: %v", err)
						return
					}
					if inside.Add(1) > 1 {
						overlaps.Add(1)
					}
					time.Sleep(time.Millisecond)
					inside.Add(-1)
					if err := l.Release(ctx); err != nil {
						t.Errorf("Release: %v", err)
						return
					}
					done.Add(1)
				}
			})
		}
	}
	wg.Wait()
	if overlaps.Load() != 0 {
		t.Fatalf("%d overlapping holdings", overlaps.Load())
	}
	if want := int64(factories * perFactory * rounds); done.Load() != want {
		t.Fatalf("%d holdings, want %d", done.Load(), want)
	}
	assertFree(t, cl, "mutex")
}

// quorumMasks tries the lock with every subset of the nodes already taken
// by another holder: it is acquired exactly when a quorum is free, and the
// other holder's keys are never touched.
func quorumMasks(t *testing.T, c Client) {
	cl := redistest.Start(t, 3)
	ctx := testContext(t)
	f := c.factory(t, cl.Addrs(), redlock.WithRetryTimes(0))
	for mask := range 1 << len(cl.Nodes) {
		name := fmt.Sprintf("mask-%d", mask)
		taken := 0
		for i, nd := range cl.Nodes {
			if mask&(1<<i) != 0 {
				nd.Do("SET", name, "other", "PX", 60000)
				taken++
			}
		}
		l := f.NewLock(name, redlock.WithAutoextend(false))
		_, err := l.TryAcquire(ctx)
		want := len(cl.Nodes)-taken >= len(cl.Nodes)/2+1
		switch {
		case want && err != nil:
			t.Fatalf("mask %03b: TryAcquire: %v, want success", mask, err)
		case !want && !errors.Is(err, redlock.ErrNotAcquired):
			t.Fatalf("mask %03b: TryAcquire: %v, want ErrNotAcquired", mask, err)
		case want:
			if err := l.Release(ctx); err != nil {
				t.Fatalf("mask %03b: Release: %v", mask, err)
			}
		}
		eventually(t, func() error { return maskKept(cl, name, mask) })
	}
}

// maskKept checks that the nodes of mask hold the other holder's token and
// the others nothing.
func maskKept(cl *redistest.Cluster, name string, mask int) error {
	for i, nd := range cl.Nodes {
		v, _ := redis.String(nd.Do("GET", name), nil)
		if mask&(1<<i) != 0 && v != "other" {
			return fmt.Errorf("mask %03b: node %d holds %q, want the other holder's token", mask, i, v)
		}
		if mask&(1<<i) == 0 && v != "" {
			return fmt.Errorf("mask %03b: node %d still holds %q", mask, i, v)
		}
	}
	return nil
}

// eventually retries check for a few seconds (a lock operation returns
// once a quorum answered, so the command to the last node may still be on
// its way) and fails with its last error.
func eventually(t *testing.T, check func() error) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// hungNode pauses one node (SIGSTOP): Acquire and Release still succeed
// on the others without waiting for the node timeout.
func hungNode(t *testing.T, c Client) {
	cl := redistest.Start(t, 3)
	ctx := testContext(t)
	const nodeTimeout = 5 * time.Second
	f := c.factory(t, cl.Addrs(), redlock.WithNodeTimeout(nodeTimeout), redlock.WithTTL(30*time.Second))
	l := f.NewLock("hung")
	warmUp(t, ctx, cl, l, "hung")
	cl.Nodes[0].Pause()
	defer cl.Nodes[0].Resume()
	start := time.Now()
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatalf("Acquire with a hung node: %v", err)
	}
	acquired := time.Since(start)
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release with a hung node: %v", err)
	}
	if d := time.Since(start); d >= nodeTimeout {
		t.Fatalf("Acquire (%v) and Release took %v: they waited for the hung node (node timeout %v)", acquired, d, nodeTimeout)
	}
}

// warmUp takes and releases l, the lock of name, before a test hangs
// nodes: the connections and the servers' identities are then known. It
// waits until every node deleted the key: Release returns once a quorum
// did, and a late delete on a healthy node would make it refuse the next
// SET, which would then rightly wait for the hung nodes.
func warmUp(t *testing.T, ctx context.Context, cl *redistest.Cluster, l *redlock.Lock, name string) {
	t.Helper()
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	assertFree(t, cl, name)
}

// lossDetection deletes the lock's keys behind its back: Extend reports
// ErrLockLost, Done closes and Err matches ErrLockLost.
func lossDetection(t *testing.T, c Client) {
	cl := redistest.Start(t, 3)
	ctx := testContext(t)
	l := c.factory(t, cl.Addrs()).NewLock("lost", redlock.WithAutoextend(false))
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	waitHolders(t, cl, "lost", 3)
	for _, nd := range cl.Nodes[:2] {
		nd.Do("DEL", "lost")
	}
	if _, err := l.Extend(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Extend of a lost lock: %v, want ErrLockLost", err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done is open after the loss")
	}
	if !errors.Is(l.Err(), redlock.ErrLockLost) {
		t.Fatalf("Err() = %v, want ErrLockLost", l.Err())
	}
}

// rlock checks reentrance: only the last Release deletes the keys.
func rlock(t *testing.T, c Client) {
	cl := redistest.Start(t, 3)
	ctx := testContext(t)
	r := c.factory(t, cl.Addrs()).NewRLock("reentrant")
	for i := range 2 {
		if _, err := r.Acquire(ctx); err != nil {
			t.Fatalf("Acquire %d: %v", i+1, err)
		}
	}
	waitHolders(t, cl, "reentrant", 3)
	if err := r.Release(ctx); err != nil {
		t.Fatalf("first Release: %v", err)
	}
	time.Sleep(50 * time.Millisecond) // a delete sent by mistake would have landed
	if n := holders(cl, "reentrant"); n != 3 {
		t.Fatalf("after the first of two Releases %d nodes hold the key, want 3", n)
	}
	if err := r.Release(ctx); err != nil {
		t.Fatalf("last Release: %v", err)
	}
	assertFree(t, cl, "reentrant")
}

// do runs a function under the lock, then one whose lock is lost while it
// runs: its context is cancelled and Do returns ErrLockLost.
func do(t *testing.T, c Client) {
	cl := redistest.Start(t, 3)
	ctx := testContext(t)
	f := c.factory(t, cl.Addrs())
	err := f.Do(ctx, "do", func(context.Context) error {
		waitHolders(t, cl, "do", 3)
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	assertFree(t, cl, "do")
	err = f.Do(ctx, "do", func(fnCtx context.Context) error {
		waitHolders(t, cl, "do", 3)
		for _, nd := range cl.Nodes {
			nd.Do("DEL", "do")
		}
		<-fnCtx.Done() // the next extension (or loss detection) finds the keys gone
		return nil
	}, redlock.WithTTL(400*time.Millisecond))
	if !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Do of a lock lost while fn runs: %v, want ErrLockLost", err)
	}
}

// cancellation cancels a blocked Acquire: it returns an error matching
// ErrNotAcquired and the context's error, and leaves no key behind.
func cancellation(t *testing.T, c Client) {
	cl := redistest.Start(t, 3)
	ctx := testContext(t)
	holder := c.factory(t, cl.Addrs()).NewLock("cancel")
	if _, err := holder.Acquire(ctx); err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	waiter := c.factory(t, cl.Addrs()).NewLock("cancel", redlock.WithRetryTimes(1<<20))
	_, err := waiter.Acquire(wctx)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled Acquire: %v, want ErrNotAcquired and DeadlineExceeded", err)
	}
	waitHolders(t, cl, "cancel", 3)
	tok := holder.Token()
	for i, nd := range cl.Nodes {
		if v, _ := redis.String(nd.Do("GET", "cancel"), nil); v != tok {
			t.Fatalf("node %d holds %q, want the holder's token", i, v)
		}
	}
}

// noScript flushes the nodes' scripts while a lock is held: Extend and
// Release fall back to EVAL.
func noScript(t *testing.T, c Client) {
	cl := redistest.Start(t, 3)
	ctx := testContext(t)
	l := c.factory(t, cl.Addrs()).NewLock("noscript", redlock.WithAutoextend(false))
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if _, err := l.Extend(ctx); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	for _, nd := range cl.Nodes {
		nd.Do("SCRIPT", "FLUSH")
	}
	if _, err := l.Extend(ctx); err != nil {
		t.Fatalf("Extend after SCRIPT FLUSH: %v", err)
	}
	for _, nd := range cl.Nodes {
		nd.Do("SCRIPT", "FLUSH")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release after SCRIPT FLUSH: %v", err)
	}
	assertFree(t, cl, "noscript")
	concurrentNoScript(t, c, cl)
}

// concurrentNoScript releases many locks at once after SCRIPT FLUSH, so
// that a client that batches sends several scripts the nodes do not know
// in one batch.
func concurrentNoScript(t *testing.T, c Client, cl *redistest.Cluster) {
	ctx := testContext(t)
	f := c.factory(t, cl.Addrs())
	locks := make([]*redlock.Lock, 32)
	for i := range locks {
		locks[i] = f.NewLock(fmt.Sprintf("noscript-%d", i), redlock.WithAutoextend(false))
		if _, err := locks[i].Acquire(ctx); err != nil {
			t.Fatalf("Acquire: %v", err)
		}
	}
	for _, nd := range cl.Nodes {
		nd.Do("SCRIPT", "FLUSH")
	}
	var wg sync.WaitGroup
	for _, l := range locks {
		wg.Go(func() {
			if err := l.Release(ctx); err != nil {
				t.Errorf("concurrent Release after SCRIPT FLUSH: %v", err)
			}
		})
	}
	wg.Wait()
	for _, l := range locks {
		assertFree(t, cl, l.Name())
	}
}

// closeWithAcquires closes a factory while its locks are held and others
// wait in Acquire: the waiters return ErrClosed and ErrNotAcquired, the
// held lock is released on the nodes, and Close returns.
func closeWithAcquires(t *testing.T, c Client) {
	cl := redistest.Start(t, 3)
	ctx := testContext(t)
	f, err := redlock.NewFactoryFromNodes(c.Nodes(t, cl.Addrs()))
	if err != nil {
		t.Fatalf("NewFactoryFromNodes: %v", err)
	}
	held := f.NewLock("closing")
	if _, err := held.Acquire(ctx); err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	const waiters = 4
	errs := make(chan error, waiters)
	for range waiters {
		go func() {
			_, err := f.NewLock("closing", redlock.WithRetryTimes(1<<20)).Acquire(ctx)
			errs <- err
		}()
	}
	time.Sleep(100 * time.Millisecond) // let them wait
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for range waiters {
		if err := <-errs; !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, redlock.ErrClosed) {
			t.Fatalf("Acquire during Close: %v, want ErrNotAcquired and ErrClosed", err)
		}
	}
	if !errors.Is(held.Err(), redlock.ErrClosed) {
		t.Fatalf("held lock's Err() = %v, want ErrClosed", held.Err())
	}
	assertFree(t, cl, "closing")
	if _, err := f.NewLock("after").TryAcquire(ctx); !errors.Is(err, redlock.ErrClosed) {
		t.Fatalf("TryAcquire after Close: %v, want ErrClosed", err)
	}
}
