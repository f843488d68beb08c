package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
)

// A token is a decimal integer, which a node stores in the key's own
// object (the "int" encoding): 48 B less per held key than a string of
// the same value would cost (BENCHMARKS.md, S2).
func TestHeldKeyIsIntegerEncodedOnEveryNode(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	l, err := redlock.NewLock("compact", pools, redlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	waitFor(t, 2*time.Second, "the token on every node", func() bool { return countHolders(t, c, "compact") == 3 })
	for i := range c.Nodes {
		enc, err := redis.String(c.Nodes[i].Do("OBJECT", "ENCODING", "compact"), nil)
		if err != nil || enc != "int" {
			t.Fatalf("node %d: OBJECT ENCODING of the held key = %q, %v; want int (token %q)", i, enc, err, l.Token())
		}
	}
}

func TestAcquireReleaseWritesTokenOnEveryNode(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	l, err := redlock.NewLock("res", pools, redlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	validity, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	drift := time.Duration(float64(10*time.Second)*redlock.DefaultDriftFactor) + 2*time.Millisecond
	if validity <= 0 || validity > 10*time.Second-drift {
		t.Fatalf("validity %v not in (0, ttl-drift]", validity)
	}
	// Acquire returns at quorum; the third SET lands just after.
	waitFor(t, 2*time.Second, "the token on every node", func() bool {
		return rawGet(t, c, 0, "res") == l.Token() && rawGet(t, c, 1, "res") == l.Token() && rawGet(t, c, 2, "res") == l.Token()
	})
	select {
	case <-l.Done():
		t.Fatal("Done closed while held")
	default:
	}
	if !l.Locked(ctx) {
		t.Fatal("Locked() = false while held")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "the key to leave every node", func() bool { return countHolders(t, c, "res") == 0 })
	<-l.Done()
	if l.Err() != nil {
		t.Fatalf("Err after Release = %v, want nil", l.Err())
	}
	// The object can be used again, with a fresh token.
	first := l.Token()
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if l.Token() == first {
		t.Fatal("re-acquire reused the token")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSecondLockCannotAcquireHeldName(t *testing.T) {
	_, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	a, _ := redlock.NewLock("busy", pools)
	b, _ := redlock.NewLock("busy", pools, redlock.WithRetryTimes(1), redlock.WithRetryDelay(10*time.Millisecond))
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Release(ctx)
	_, err := b.TryAcquire(ctx)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, redlock.ErrRedlock) {
		t.Fatalf("TryAcquire of a held name: %v, want ErrNotAcquired", err)
	}
	if !strings.Contains(err.Error(), "after 2 attempt(s)") {
		t.Fatalf("error %q does not count the 2 attempts", err)
	}
	// The holder's TTL is 120 s: the error names the cause and how long.
	if msg := err.Error(); !strings.Contains(msg, "(held by another client, 1m59.") || !strings.Contains(msg, "left unless extended)") {
		t.Fatalf("error %q does not say that another client holds the lock, and for how long", msg)
	}
}

// TestMutualExclusionGoroutines has 16 goroutines contend for one name; the
// holders' validity intervals never overlap and a guarded read-modify-write
// counter loses no update.
func TestMutualExclusionGoroutines(t *testing.T) {
	for _, pipelining := range []bool{true, false} {
		t.Run(fmt.Sprintf("pipelining=%v", pipelining), func(t *testing.T) {
			mutualExclusion(t, redlock.WithPipelining(pipelining))
		})
	}
}

func mutualExclusion(t *testing.T, opt redlock.Option) {
	_, pools := cluster(t, 3)
	ctx := ctxT(t, 60*time.Second)
	f, err := redlock.NewFactory(pools, opt, redlock.WithTTL(5*time.Second), redlock.WithNodeTimeout(time.Second), redlock.WithRetryDelay(5*time.Millisecond), redlock.WithAutoextend(false))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const workers, rounds = 16, 8
	iv := newIntervals()
	var inside atomic.Int32
	counter := 0
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := f.NewLock("shared")
			for range rounds {
				validity, err := l.Acquire(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				acquired := time.Now()
				if n := inside.Add(1); n != 1 {
					t.Errorf("%d holders inside at once", n)
				}
				v := counter
				time.Sleep(time.Millisecond)
				counter = v + 1
				inside.Add(-1)
				released := time.Now()
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
				iv.add(w, acquired, validity, released)
			}
		}()
	}
	wg.Wait()
	if counter != workers*rounds {
		t.Fatalf("counter = %d, want %d: updates were lost", counter, workers*rounds)
	}
	if n := iv.overlaps(); n != 0 {
		t.Fatalf("%d overlapping holdings", n)
	}
	t.Logf("%d acquisitions by %d goroutines, 0 overlaps", workers*rounds, workers)
}

// TestMutualExclusionProcesses runs this test binary twice as separate OS
// processes contending for one name; each appends its holdings (wall clock,
// shared by processes on one machine) and bumps a counter file under the lock.
func TestMutualExclusionProcesses(t *testing.T) {
	if os.Getenv("REDLOCK_CHILD") != "" {
		childProcess(t)
		return
	}
	c, _ := cluster(t, 3)
	dir := t.TempDir()
	counter := dir + "/counter"
	if err := os.WriteFile(counter, []byte("0"), 0o600); err != nil {
		t.Fatal(err)
	}
	const rounds = 15
	var cmds []*exec.Cmd
	for i := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMutualExclusionProcesses$")
		cmd.Env = append(os.Environ(),
			"REDLOCK_CHILD="+strconv.Itoa(i),
			"REDLOCK_CHILD_NODES="+strings.Join(c.URLs(), ","),
			"REDLOCK_CHILD_DIR="+dir,
			"REDLOCK_CHILD_ROUNDS="+strconv.Itoa(rounds))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	raw, _ := os.ReadFile(counter)
	if got := strings.TrimSpace(string(raw)); got != strconv.Itoa(2*rounds) {
		t.Fatalf("counter = %s, want %d", got, 2*rounds)
	}
	iv := newIntervals()
	base := iv.base
	for i := range 2 {
		data, err := os.ReadFile(fmt.Sprintf("%s/holdings-%d", dir, i))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Fields(string(data))
		if len(lines) != 2*rounds {
			t.Fatalf("child %d logged %d values, want %d", i, len(lines), 2*rounds)
		}
		for k := 0; k < len(lines); k += 2 {
			s, _ := strconv.ParseInt(lines[k], 10, 64)
			e, _ := strconv.ParseInt(lines[k+1], 10, 64)
			iv.list = append(iv.list, interval{i, time.Duration(s) - time.Duration(base.UnixNano()), time.Duration(e) - time.Duration(base.UnixNano())})
		}
	}
	if n := iv.overlaps(); n != 0 {
		t.Fatalf("%d overlapping holdings between the two processes", n)
	}
}

// childProcess is one contender of TestMutualExclusionProcesses.
func childProcess(t *testing.T) {
	id := os.Getenv("REDLOCK_CHILD")
	dir := os.Getenv("REDLOCK_CHILD_DIR")
	rounds, _ := strconv.Atoi(os.Getenv("REDLOCK_CHILD_ROUNDS"))
	f, err := redlock.NewFactoryFromURLs(strings.Split(os.Getenv("REDLOCK_CHILD_NODES"), ","),
		redlock.WithTTL(5*time.Second), redlock.WithRetryDelay(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := ctxT(t, 60*time.Second)
	log, err := os.Create(dir + "/holdings-" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	l := f.NewLock("processes")
	for range rounds {
		validity, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		raw, _ := os.ReadFile(dir + "/counter")
		n, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
		time.Sleep(2 * time.Millisecond)
		if err := os.WriteFile(dir+"/counter", []byte(strconv.Itoa(n+1)), 0o600); err != nil {
			t.Fatal(err)
		}
		end := min(time.Now().UnixNano(), start.Add(validity).UnixNano())
		fmt.Fprintf(log, "%d %d\n", start.UnixNano(), end)
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAcquireWithOneNodeDown(t *testing.T) {
	c, pools := cluster(t, 3)
	c.Nodes[1].Kill()
	ctx := ctxT(t, 10*time.Second)
	l, _ := redlock.NewLock("down", pools, redlock.WithAutoextend(false))
	if _, err := l.TryAcquire(ctx); err != nil {
		t.Fatalf("acquire with 2 of 3 nodes up: %v", err)
	}
	held, times, err := l.CheckTimes(ctx)
	if !held || err != nil || times[1] != 0 || times[0] <= 0 || times[2] <= 0 {
		t.Fatalf("CheckTimes = %v %v %v, want held on nodes 0 and 2 only", held, times, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release with 2 of 3 nodes up: %v", err)
	}
	// With two nodes down no quorum remains: the error names the nodes.
	c.Nodes[2].Kill()
	_, err = l.TryAcquire(ctx)
	var nodeErr *redlock.NodeError
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.As(err, &nodeErr) {
		t.Fatalf("acquire with 1 of 3 nodes up: %v, want ErrNotAcquired with a NodeError", err)
	}
	waitFor(t, 2*time.Second, "the failed attempt's key to leave node 0", func() bool {
		return rawGet(t, c, 0, "down") == ""
	})
}

// TestAcquireWithHungNode freezes one node (SIGSTOP) for longer than the
// node timeout: the acquire decides at quorum without waiting for it, and the
// late node is cleaned up after release.
func TestAcquireWithHungNode(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 20*time.Second)
	const nodeTimeout = 2 * time.Second
	l, _ := redlock.NewLock("hung", pools, redlock.WithTTL(30*time.Second), redlock.WithNodeTimeout(nodeTimeout), redlock.WithAutoextend(false))
	c.Nodes[2].Pause()
	start := time.Now()
	validity, err := l.Acquire(ctx)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if took >= nodeTimeout {
		t.Fatalf("acquire took %v: it waited for the hung node (timeout %v)", took, nodeTimeout)
	}
	if validity <= 30*time.Second-nodeTimeout {
		t.Fatalf("validity %v suggests the hung node's timeout was spent", validity)
	}
	t.Logf("acquire with a hung node took %v, validity %v", took, validity)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c.Nodes[2].Resume()
	// The frozen node executes the queued SET once resumed; the attempt's
	// late-reply cleanup (or the TTL) must remove it, never leave it held.
	waitFor(t, 5*time.Second, "the resumed node to drop the key", func() bool {
		return rawGet(t, c, 2, "hung") == ""
	})
}

func TestCancelledContext(t *testing.T) {
	c, pools := cluster(t, 3)
	l, _ := redlock.NewLock("cancel", pools)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := l.Acquire(cancelled)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire(cancelled) = %v, want ErrNotAcquired and context.Canceled", err)
	}

	// A contended Acquire ends with its deadline.
	holder, _ := redlock.NewLock("cancel", pools, redlock.WithAutoextend(false))
	ctx := ctxT(t, 10*time.Second)
	if _, err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	_, err = l.Acquire(short)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("contended Acquire = %v, want ErrNotAcquired and DeadlineExceeded", err)
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "no key after a cancelled acquire and the release", func() bool {
		return countHolders(t, c, "cancel") == 0
	})
}

// TestCancelledAttemptLeavesNothing: two nodes execute the SET but their
// replies never arrive; the caller's context ends mid-attempt. Acquire
// returns at once, and the keys the attempt did write are deleted
// everywhere once the node commands end (within the node timeout).
func TestCancelledAttemptLeavesNothing(t *testing.T) {
	c, raw := cluster(t, 3)
	pools, faulty := withFaults(raw)
	faulty[1].LoseReplies.Store(true)
	faulty[2].LoseReplies.Store(true)
	l, _ := redlock.NewLock("midway", pools, redlock.WithTTL(60*time.Second), redlock.WithNodeTimeout(time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // cancel once both SETs were executed by their nodes
		defer cancel()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			if faulty[1].Commands.Load() > 0 && faulty[2].Commands.Load() > 0 {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	_, err := l.Acquire(ctx)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire = %v, want ErrNotAcquired and context.Canceled", err)
	}
	faulty[1].LoseReplies.Store(false)
	faulty[2].LoseReplies.Store(false)
	waitFor(t, 5*time.Second, "the attempt's keys to be deleted", func() bool {
		return rawGet(t, c, 0, "midway") == "" && rawGet(t, c, 1, "midway") == "" && rawGet(t, c, 2, "midway") == ""
	})
}

// TestPipelinedNodeHangsAndRestarts: with a factory's shared connections, a
// frozen node neither stalls acquisitions nor keeps its dead connection, and
// a node killed and started again is dialled afresh.
func TestPipelinedNodeHangsAndRestarts(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 30*time.Second)
	f, _ := redlock.NewFactory(pools, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(300*time.Millisecond), redlock.WithAutoextend(false))
	defer f.Close()
	l := f.NewLock("pipe")
	cycle := func(what string) {
		t.Helper()
		if _, err := l.Acquire(ctx); err != nil {
			t.Fatalf("%s: acquire: %v", what, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("%s: release: %v", what, err)
		}
	}
	cycle("healthy")
	c.Nodes[1].Pause()
	for range 5 {
		cycle("node 1 frozen")
	}
	c.Nodes[1].Resume()
	c.Nodes[2].Kill()
	cycle("node 2 down")
	c.Nodes[2].Start()
	c.Nodes[0].Kill()
	// Nodes 1 (resumed) and 2 (restarted) must carry the quorum now.
	waitFor(t, 5*time.Second, "a quorum through the recovered connections", func() bool {
		_, err := l.TryAcquire(ctx)
		if err == nil {
			l.Release(ctx)
		}
		return err == nil
	})
}

// TestReleaseReachesEveryNodeAfterCancel: Release decides at quorum, and
// the caller cancels its context right after, as a deferred cancel does.
// The delete must still reach the last node.
func TestReleaseReachesEveryNodeAfterCancel(t *testing.T) {
	for _, path := range transports {
		t.Run(path.name, func(t *testing.T) {
			c, pools := cluster(t, 3)
			newLock := path.lockMaker(t, pools)
			for i := range 20 {
				l := newLock(fmt.Sprintf("cancelled-release-%d", i), redlock.WithAutoextend(false))
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if _, err := l.Acquire(ctx); err != nil {
					t.Fatal(err)
				}
				waitFor(t, 2*time.Second, "the key on every node", func() bool { return countHolders(t, c, l.Name()) == 3 })
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
				cancel()
				waitFor(t, 2*time.Second, "the key to leave every node", func() bool { return countHolders(t, c, l.Name()) == 0 })
			}
		})
	}
}

// TestReleaseRetriesFailedNode: a node refuses connections while the lock is
// released, so Release succeeds on the other two; once the node is back, the
// background retry deletes its key, and the next holder gets all three.
func TestReleaseRetriesFailedNode(t *testing.T) {
	c, raw := cluster(t, 3)
	pools, faulty := withFaults(raw)
	ctx := ctxT(t, 10*time.Second)
	l, _ := redlock.NewLock("retry-release", pools, redlock.WithTTL(60*time.Second), redlock.WithNodeTimeout(200*time.Millisecond), redlock.WithAutoextend(false))
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "the key on every node", func() bool { return countHolders(t, c, "retry-release") == 3 })
	faulty[2].Refuse.Store(true)
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release with 2 of 3 nodes: %v", err)
	}
	faulty[2].Refuse.Store(false)
	waitFor(t, 3*time.Second, "the retried delete on node 2", func() bool { return rawGet(t, c, 2, "retry-release") == "" })
}
