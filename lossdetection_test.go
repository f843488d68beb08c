package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// detectBound is how long a detected loss may take to close Done in these
// tests: generous for a loaded machine, and far below the 90 s after which
// the next extension of a lock with the default TTL would notice it.
const detectBound = 5 * time.Second

// checkRounds counts, per node, the loss detector's check calls that the
// node answered: the NodeReply events of its check_many rounds, which the
// factory's observer receives.
type checkRounds struct {
	mu      sync.Mutex
	perNode map[int]int
}

// observer returns base, given to a factory, with the counting added.
func (cr *checkRounds) observer(base redlock.Observer) redlock.Option {
	cr.perNode = map[int]int{}
	base.NodeReply = func(_ context.Context, e redlock.NodeReplyEvent) {
		if e.Op == "check_many" && !e.Undecided && e.Err == nil {
			cr.mu.Lock()
			cr.perNode[e.Node]++
			cr.mu.Unlock()
		}
	}
	return redlock.WithObserver(base)
}

// on returns node i's count.
func (cr *checkRounds) on(i int) int {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return cr.perNode[i]
}

// rounds is the count of check calls that every node of c answered.
func (cr *checkRounds) rounds(c *redistest.Cluster) int {
	n := -1
	for i := range c.Nodes {
		if k := cr.on(i); n < 0 || k < n {
			n = k
		}
	}
	return n
}

// settle waits until no check round has been answered for 200 ms, and
// returns the count.
func (cr *checkRounds) settle(t *testing.T, c *redistest.Cluster) int {
	t.Helper()
	prev := -1
	waitFor(t, detectBound, "the loss detector's checks to settle", func() bool {
		n := cr.rounds(c)
		ok := n == prev
		prev = n
		time.Sleep(200 * time.Millisecond)
		return ok
	})
	return prev
}

// checkedAfter waits until every node has answered a check round more
// than before.
func (cr *checkRounds) checkedAfter(t *testing.T, c *redistest.Cluster, before int) {
	t.Helper()
	waitFor(t, detectBound, "a check round", func() bool { return cr.rounds(c) > before })
}

// detectFactory is factory with a check-round counter on top of base.
func detectFactory(t *testing.T, base redlock.Observer, opts ...redlock.Option) (*redistest.Cluster, *redlock.Factory, *checkRounds) {
	t.Helper()
	cr := &checkRounds{}
	c, f := factory(t, append(opts, cr.observer(base))...)
	return c, f, cr
}

// trackedKeys is node n's count of keys tracked for client-side caching,
// that is for the loss detector (INFO stats tracking_total_keys).
func trackedKeys(t *testing.T, n *redistest.Node) int {
	t.Helper()
	info, err := redis.String(n.Do("INFO", "stats"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "tracking_total_keys:"); ok {
			k, _ := strconv.Atoi(v)
			return k
		}
	}
	return 0
}

// tracked waits until every node tracks at least keys keys, with the
// detector's subscriber connection up.
func tracked(t *testing.T, c *redistest.Cluster, keys int) {
	t.Helper()
	waitFor(t, detectBound, fmt.Sprintf("%d keys tracked on every node", keys), func() bool {
		for _, n := range c.Nodes {
			if trackedKeys(t, n) < keys || invalidationSubscribers(t, n) == 0 {
				return false
			}
		}
		return true
	})
}

// invalidationSubscribers is node n's count of subscribers of the
// invalidation channel: the loss detector's connections.
func invalidationSubscribers(t *testing.T, n *redistest.Node) int64 {
	t.Helper()
	subs, _ := redis.Int64(n.Do("PUBSUB", "NUMSUB", "__redis__:invalidate").([]any)[1], nil)
	return subs
}

// heldLock acquires a lock of f with the default TTL (120 s) and no
// autoextension, and waits until every node of c tracks its key: one more
// key than before.
func heldLock(t *testing.T, c *redistest.Cluster, f *redlock.Factory, name string, opts ...redlock.Option) *redlock.Lock {
	t.Helper()
	before := trackedKeys(t, c.Nodes[0])
	for _, n := range c.Nodes[1:] {
		before = min(before, trackedKeys(t, n))
	}
	l := f.NewLock(name, append([]redlock.Option{redlock.WithAutoextend(false)}, opts...)...)
	if _, err := l.Acquire(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	tracked(t, c, before+1)
	return l
}

// lostWithin fails unless l's Done closes within detectBound and its Err
// matches ErrLockLost.
func lostWithin(t *testing.T, l *redlock.Lock) {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(detectBound):
		t.Fatalf("lock %q: Done still open %v after its keys left a quorum", l.Name(), detectBound)
	}
	if err := l.Err(); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("lock %q: Err = %v, want ErrLockLost", l.Name(), err)
	}
}

// stillHeld fails when l's holding has ended.
func stillHeld(t *testing.T, l *redlock.Lock) {
	t.Helper()
	select {
	case <-l.Done():
		t.Fatalf("lock %q ended: %v", l.Name(), l.Err())
	default:
	}
	if err := l.Err(); err != nil {
		t.Fatalf("lock %q: Err = %v", l.Name(), err)
	}
}

// TestLossDetectionDelete deletes a held lock's key on a quorum: Done closes
// long before the next extension, with ErrLockLost and cause LossDetected.
func TestLossDetectionDelete(t *testing.T) {
	causes := make(chan redlock.LossCause, 1)
	c, f := factory(t, redlock.WithObserver(redlock.Observer{Lost: func(e redlock.LossEvent) { causes <- e.Cause }}))
	l := heldLock(t, c, f, "detect-del")
	c.Nodes[0].Do("DEL", "detect-del")
	c.Nodes[2].Do("DEL", "detect-del")
	lostWithin(t, l)
	if cause := <-causes; cause != redlock.LossDetected {
		t.Fatalf("loss cause %v, want %v", cause, redlock.LossDetected)
	}
}

// TestLossDetectionBareAcquire checks that loss detection costs an
// acquisition nothing at the nodes: the acquire is a bare SET NX PX, and
// the release its one script, for locks released before the detector's
// first check. A holding that outlived it was checked (one more script
// per node and check round).
func TestLossDetectionBareAcquire(t *testing.T) {
	c, f, cr := detectFactory(t, redlock.Observer{}, redlock.WithAutoextend(false))
	ctx := ctxT(t, 20*time.Second)
	l := f.NewLock("detect-bare")
	warmUp(t, ctx, l)
	checks := resetStats(t, c, cr)
	const cycles = 20
	for range cycles {
		warmUp(t, ctx, l)
	}
	settled(t, c)
	for i := range c.Nodes {
		extra := int64(cr.on(i) - checks[i])
		if sets, scripts := commandCalls(t, c, i, "set"), scriptCalls(t, c, i); sets != cycles || scripts != cycles+extra {
			t.Errorf("node %d: %d SETs and %d scripts in %d cycles (%d check rounds); want %d and %d",
				i, sets, scripts, cycles, extra, cycles, cycles+extra)
		}
	}
}

// TestLossDetectionBeforeFirstCheck breaks a lock's keys on a quorum right
// after Acquire, before the detector's first check tracks them: that
// check finds the lock lost.
func TestLossDetectionBeforeFirstCheck(t *testing.T) {
	for _, how := range []string{"delete", "overwrite"} {
		t.Run(how, func(t *testing.T) {
			c, f := factory(t, redlock.WithAutoextend(false))
			ctx := ctxT(t, 10*time.Second)
			// The first acquisition of a factory sets tracking up, and
			// is checked at once for that: this test is about the next.
			heldLock(t, c, f, "detect-early-warm-up")
			l := f.NewLock("detect-early")
			if _, err := l.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			// Acquire returns at a quorum: the third SET may still be on
			// its way, and landing on node 0 or 1 after the break below it
			// would keep a quorum holding the token. Break only once every
			// node holds it (most often at the first look).
			waitFor(t, 5*time.Second, "every node to hold the token", func() bool { return countHolders(t, c, "detect-early") == 3 })
			for _, n := range c.Nodes[:2] {
				if how == "delete" {
					n.Do("DEL", "detect-early")
				} else {
					n.Do("SET", "detect-early", "intruder", "KEEPTTL")
				}
			}
			lostWithin(t, l)
		})
	}
}

// TestLossDetectionOverwrite overwrites a held lock's key with another
// token on a quorum, keeping its TTL: the key still exists, but the lock is
// lost.
func TestLossDetectionOverwrite(t *testing.T) {
	c, f := factory(t)
	l := heldLock(t, c, f, "detect-overwrite")
	c.Nodes[1].Do("SET", "detect-overwrite", "intruder", "KEEPTTL")
	c.Nodes[2].Do("SET", "detect-overwrite", "intruder", "KEEPTTL")
	lostWithin(t, l)
}

// TestLossDetectionMinority deletes the key on one node of three: the
// check finds a quorum still holding the token and the lock stays held;
// deleting it on a second node then ends it.
func TestLossDetectionMinority(t *testing.T) {
	c, f, cr := detectFactory(t, redlock.Observer{})
	l := heldLock(t, c, f, "detect-minority")
	before := cr.settle(t, c)
	c.Nodes[0].Do("DEL", "detect-minority")
	cr.checkedAfter(t, c, before) // the invalidation was heard and checked
	cr.settle(t, c)
	stillHeld(t, l)
	if held, _, err := l.CheckTimes(ctxT(t, 5*time.Second)); !held || err != nil {
		t.Fatalf("CheckTimes after a minority delete = %v, %v; want held", held, err)
	}
	c.Nodes[1].Do("DEL", "detect-minority")
	lostWithin(t, l)
}

// TestLossDetectionIgnoresOwnWrites extends a lock explicitly and by
// autoextension: the holder's own writes produce no invalidation (NOLOOP),
// and the key stays tracked after them, so a later delete is detected. A
// write of another lock's key by another client on every node (with its
// own token, so that it stays held) marks the end of what the nodes sent:
// each subscriber connection delivers in order.
func TestLossDetectionIgnoresOwnWrites(t *testing.T) {
	c, f, cr := detectFactory(t, redlock.Observer{})
	l := heldLock(t, c, f, "detect-own")
	var autoMu sync.Mutex
	autoExtended := 0
	short := f.NewLock("detect-own-auto", redlock.WithTTL(2*time.Second),
		redlock.WithObserver(redlock.Observer{Extended: func(e redlock.ExtendEvent) {
			if e.Auto && e.OK {
				autoMu.Lock()
				autoExtended++
				autoMu.Unlock()
			}
		}}))
	if _, err := short.Acquire(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	marker := heldLock(t, c, f, "detect-own-marker")
	tracked(t, c, 3)
	quiet := cr.settle(t, c) // every holding's first check is done
	for range 3 {
		if _, err := l.Extend(ctxT(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "two autoextensions", func() bool {
		if err := short.Err(); err != nil {
			t.Fatalf("the autoextended lock ended: %v", err)
		}
		autoMu.Lock()
		defer autoMu.Unlock()
		return autoExtended >= 2
	})
	if n := cr.rounds(c); n != quiet {
		t.Fatalf("%d check rounds while only the holders wrote their keys, want none: their own extensions were announced", n-quiet)
	}
	for _, n := range c.Nodes {
		n.Do("SET", "detect-own-marker", marker.Token(), "KEEPTTL")
	}
	cr.checkedAfter(t, c, quiet) // the marker's invalidations, heard in order after anything before them
	cr.settle(t, c)
	stillHeld(t, l)
	stillHeld(t, short)
	stillHeld(t, marker) // written again with its own token: checked, still held
	c.Nodes[0].Do("DEL", "detect-own", "detect-own-auto")
	c.Nodes[1].Do("DEL", "detect-own", "detect-own-auto")
	lostWithin(t, l)
	lostWithin(t, short)
}

// TestLossDetectionSubscriberKilled kills the detector's subscriber
// connections: they are dialled again, the command connections are
// redirected to the new ones, and a delete is detected again.
func TestLossDetectionSubscriberKilled(t *testing.T) {
	c, f := factory(t)
	l := heldLock(t, c, f, "detect-kill")
	for _, n := range c.Nodes {
		n.Do("CLIENT", "KILL", "TYPE", "pubsub")
	}
	tracked(t, c, 1) // subscribers back, and the key tracked again by the check after it
	c.Nodes[0].Do("DEL", "detect-kill")
	c.Nodes[1].Do("DEL", "detect-kill")
	lostWithin(t, l)
}

// TestLossDetectionRechecksAfterReconnect deletes the key in the same
// transaction that kills the subscriber, so that the node cannot announce
// the delete: the check made once the subscriber is back finds it.
func TestLossDetectionRechecksAfterReconnect(t *testing.T) {
	c, f := factory(t)
	l := heldLock(t, c, f, "detect-lost-news")
	for _, n := range c.Nodes[:2] {
		killAndDelete(t, n, "detect-lost-news")
	}
	lostWithin(t, l)
}

// killAndDelete kills node n's pub/sub connections and deletes key in one
// MULTI/EXEC.
func killAndDelete(t *testing.T, n *redistest.Node, key string) {
	t.Helper()
	conn, err := redis.Dial("tcp", n.Addr(), redis.DialConnectTimeout(2*time.Second), redis.DialReadTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.Send("MULTI")
	_ = conn.Send("CLIENT", "KILL", "TYPE", "pubsub")
	_ = conn.Send("DEL", key)
	replies, err := redis.Values(conn.Do("EXEC"))
	if err != nil || len(replies) != 2 {
		t.Fatalf("MULTI CLIENT KILL, DEL on %s: %v %v", n.Addr(), replies, err)
	}
	if killed, _ := redis.Int64(replies[0], nil); killed < 1 {
		t.Fatalf("CLIENT KILL TYPE pubsub on %s killed %d connections", n.Addr(), killed)
	}
	if deleted, _ := redis.Int64(replies[1], nil); deleted != 1 {
		t.Fatalf("DEL %s on %s deleted %d keys", key, n.Addr(), deleted)
	}
}

// TestLossDetectionFlushAll flushes a quorum of nodes: every held lock
// ends, checked in batches of up to 1000 names (two per flush here) rather
// than one round per lock.
func TestLossDetectionFlushAll(t *testing.T) {
	const locks = 1200
	c, f, cr := detectFactory(t, redlock.Observer{})
	ctx := ctxT(t, time.Minute)
	held := make([]*redlock.Lock, locks)
	for i := range held {
		held[i] = f.NewLock(fmt.Sprintf("detect-flush-%d", i), redlock.WithAutoextend(false))
		if _, err := held[i].Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tracked(t, c, locks)
	before := cr.settle(t, c)
	c.Nodes[0].Do("FLUSHALL")
	c.Nodes[2].Do("FLUSHALL")
	for _, l := range held {
		lostWithin(t, l)
	}
	if rounds := cr.settle(t, c) - before; rounds > 4 {
		t.Fatalf("%d check rounds for two flushes of %d locks, want at most two per flush", rounds, locks)
	}
}

// TestLossDetectionCloseLeavesNoGoroutine closes a factory whose detector
// runs: its subscribers and worker end, and the command connections go
// back to the pool with tracking off.
func TestLossDetectionCloseLeavesNoGoroutine(t *testing.T) {
	c := redistest.Start(t, 3)
	pools := c.Pools()
	before := leakcheck.Current()
	f, err := redlock.NewFactory([]redlock.Pool{pools[0], pools[1], pools[2]})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		heldLock(t, c, f, fmt.Sprintf("detect-close-%d", i))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := leakcheck.FindNew(before, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	for i, n := range c.Nodes {
		if subs := invalidationSubscribers(t, n); subs != 0 {
			t.Errorf("node %d: %d subscribers of __redis__:invalidate after Close", i, subs)
		}
		list, _ := redis.String(n.Do("CLIENT", "LIST"), nil)
		for line := range strings.Lines(list) {
			for field := range strings.FieldsSeq(line) {
				if flags, ok := strings.CutPrefix(field, "flags="); ok && strings.Contains(flags, "t") {
					t.Errorf("node %d: a client still tracks keys after Close: %s", i, line)
				}
			}
		}
	}
}

// TestLossDetectionOff checks that WithLossDetection(false) builds no
// detector, that other transports have none, and that the option is
// refused on one lock.
func TestLossDetectionOff(t *testing.T) {
	c, pools := cluster(t, 3)
	for _, tc := range []struct {
		name string
		opts []redlock.Option
		on   bool
	}{
		{"default", nil, true},
		{"off", []redlock.Option{redlock.WithLossDetection(false)}, false},
		{"pool transport", []redlock.Option{redlock.WithPipelining(false)}, false},
	} {
		f, err := redlock.NewFactory(pools, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		held := f.NewLock("detect-off-held")
		if _, err := held.Acquire(ctxT(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		if tc.on {
			tracked(t, c, 1)
		} else {
			time.Sleep(100 * time.Millisecond) // a detector would have subscribed by now (trackDelay is 10 ms)
			for i, n := range c.Nodes {
				if subs, keys := invalidationSubscribers(t, n), trackedKeys(t, n); subs != 0 || keys != 0 {
					t.Errorf("%s: node %d has %d invalidation subscribers and tracks %d keys, want no detector", tc.name, i, subs, keys)
				}
			}
		}
		l := f.NewLock("detect-off", redlock.WithLossDetection(true))
		if _, err := l.TryAcquire(context.Background()); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("%s: WithLossDetection on one lock: %v, want ErrInvalidArgument", tc.name, err)
		}
		f.Close()
		waitFor(t, detectBound, "the detector's subscribers to leave", func() bool {
			for _, n := range c.Nodes {
				if invalidationSubscribers(t, n) != 0 || trackedKeys(t, n) != 0 {
					return false
				}
			}
			return true
		})
	}
}

// TestLossDetectionRecipes acquires, once tracking is up, a fenced lock, a
// multi-lock and a writer: their own scripts (acquire_fenced, multi_set,
// rw_write) must read the key after writing it, or the deletes below go
// unheard, since no re-check reads them.
func TestLossDetectionRecipes(t *testing.T) {
	c, f, cr := detectFactory(t, redlock.Observer{})
	heldLock(t, c, f, "detect-recipes-warm-up")
	ctx := ctxT(t, 10*time.Second)
	noExtend := redlock.WithAutoextend(false)
	fenced := f.NewLock("detect-fenced", redlock.WithFencing(true), noExtend)
	multi := f.NewMultiLock([]string{"detect-m1", "detect-m2"}, noExtend)
	writer := f.NewWriteLock("detect-rw", noExtend)
	for _, l := range []redlock.Locker{fenced, multi, writer} {
		if _, err := l.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tracked(t, c, 1+1+2+1)
	before := cr.settle(t, c)
	for _, n := range c.Nodes[1:] {
		n.Do("DEL", "detect-fenced", "detect-m2", "detect-rw:rw:w")
	}
	for _, l := range []redlock.Locker{fenced, multi, writer} {
		select {
		case <-l.Done():
		case <-time.After(detectBound):
			t.Fatalf("%s: Done still open %v after its key left a quorum", l.Name(), detectBound)
		}
		if err := l.Err(); !errors.Is(err, redlock.ErrLockLost) {
			t.Fatalf("%s: Err = %v, want ErrLockLost", l.Name(), err)
		}
	}
	if cr.rounds(c) == before {
		t.Fatal("no check ran")
	}
}

// TestLossDetectionManyAutoextended holds 5,000 autoextended locks with a
// 2 s TTL through two extension rounds: none is lost, and a lock's keys
// deleted on a quorum after the batched extensions are still noticed (the
// batch script keeps its keys tracked). With a GET per key inside the
// batch script, Redis 7.0 tracked all of the script's keys at every GET:
// 43 ms per batch of 1,000 against a node timeout of 20 ms, and 4,000 of
// 10,000 such locks ran out of validity.
func TestLossDetectionManyAutoextended(t *testing.T) {
	const locks = 5000
	c, f := factory(t)
	ctx := ctxT(t, time.Minute)
	held := make([]*redlock.Lock, locks)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range held {
		held[i] = f.NewLock(fmt.Sprintf("detect-many-%d", i), redlock.WithTTL(2*time.Second), redlock.WithAutoextend(true))
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := held[i].Acquire(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	time.Sleep(4 * time.Second) // two extensions, at 3/4 of the validity
	for _, l := range held {
		stillHeld(t, l)
	}
	tracked(t, c, locks)
	victim := held[locks/2]
	c.Nodes[0].Do("DEL", victim.Name())
	c.Nodes[1].Do("DEL", victim.Name())
	lostWithin(t, victim)
	for _, l := range held {
		if l != victim {
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}
