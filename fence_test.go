package redlock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/fenceclock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// fenceOn reads the fence key of lock name on node i (0 when absent).
func fenceOn(t *testing.T, c *redistest.Cluster, i int, name string) int64 {
	t.Helper()
	v := rawGet(t, c, i, name+redlock.FenceSuffix)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("fence on node %d is %q: %v", i, v, err)
	}
	return n
}

// serverMicros is node 0's TIME in microseconds.
func serverMicros(t *testing.T, c *redistest.Cluster) int64 {
	t.Helper()
	vals, err := redis.Int64s(c.Nodes[0].Do("TIME"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return vals[0]*1_000_000 + vals[1]
}

// TestFenceGrowsWithEveryHolding: every holding gets a larger token, seeded
// above the servers' clock, written back to a quorum, and only while held.
func TestFenceGrowsWithEveryHolding(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c, pools := cluster(t, 3)
			ctx := ctxT(t, 20*time.Second)
			l := tr.lockMaker(t, pools)("fenced", redlock.WithTTL(10*time.Second), redlock.WithFencing(true))
			if l.Fence() != 0 {
				t.Fatalf("Fence before Acquire = %d, want 0", l.Fence())
			}
			before := serverMicros(t, c)
			var last int64
			for i := 0; i < 5; i++ {
				if _, err := l.Acquire(ctx); err != nil {
					t.Fatal(err)
				}
				tok := l.Fence()
				if tok <= last || tok <= before {
					t.Fatalf("holding %d: token %d, want above the last %d and the servers' clock %d", i, tok, last, before)
				}
				committed := 0
				for n := range c.Nodes {
					if fenceOn(t, c, n, "fenced") == tok {
						committed++
					}
				}
				if committed < 2 {
					t.Fatalf("holding %d: token %d committed on %d nodes, want a quorum of 2", i, tok, committed)
				}
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
				if l.Fence() != 0 {
					t.Fatalf("Fence after Release = %d, want 0", l.Fence())
				}
				last = tok
			}
		})
	}
}

// TestFenceOffWritesNoFenceKey: without WithFencing nothing is minted and
// no fence key is written.
func TestFenceOffWritesNoFenceKey(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	l, _ := redlock.NewLock("plain", pools, redlock.WithTTL(10*time.Second))
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if l.Fence() != 0 {
		t.Fatalf("Fence without fencing = %d, want 0", l.Fence())
	}
	for n := range c.Nodes {
		if v := rawGet(t, c, n, "plain"+redlock.FenceSuffix); v != "" {
			t.Fatalf("node %d has fence %q without fencing", n, v)
		}
	}
}

// TestExtendKeepsTheFenceAndReacquireMints: Extend never mints; an
// AcquireOrExtend that finds the lock lost acquires anew with a larger
// token.
func TestExtendKeepsTheFenceAndReacquireMints(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 20*time.Second)
	f, _ := redlock.NewFactory(pools, redlock.WithTTL(10*time.Second), redlock.WithFencing(true), redlock.WithAutoextend(false))
	defer f.Close()
	r := f.NewRLock("again")
	if _, err := r.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	first := r.Fence()
	if _, err := r.Extend(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.AcquireOrExtend(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Fence() != first {
		t.Fatalf("Extend and a nested AcquireOrExtend changed the token from %d to %d", first, r.Fence())
	}
	for _, n := range c.Nodes { // another client's delete: the lock is lost
		n.Do("DEL", "again")
	}
	if _, err := r.AcquireOrExtend(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Fence() <= first {
		t.Fatalf("re-acquired token %d is not above %d", r.Fence(), first)
	}
	for r.Level() > 0 {
		if err := r.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFenceSurvivesEmptyRestarts: a quorum of nodes restart empty, so the
// one node that remembers the last token is outvoted; the servers' clock
// still seeds a larger token.
func TestFenceSurvivesEmptyRestarts(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 30*time.Second)
	l, _ := redlock.NewLock("reborn", pools, redlock.WithTTL(10*time.Second), redlock.WithFencing(true), redlock.WithAutoextend(false))
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	first := l.Fence()
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes[1:] {
		n.Kill()
		n.Start()
	}
	c.Nodes[0].Kill() // the node that remembers is gone too: only clocks seed
	_, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if l.Fence() <= first {
		t.Fatalf("token %d after empty restarts is not above %d", l.Fence(), first)
	}
	c.Nodes[0].Start()
}

// TestFenceNotCommitted: with the client's clock an hour behind the nodes',
// the acquire wins a quorum but commits nothing, and the write-back cannot
// reach one; the attempt fails with ErrFenceNotCommitted (an
// ErrNotAcquired), and its keys are deleted once the nodes answer again.
func TestFenceNotCommitted(t *testing.T) {
	t.Cleanup(fenceclock.Skew(-time.Hour)) // no commit in the acquire round
	c, raw := cluster(t, 3)
	pools, faulty := withFaults(raw)
	l, _ := redlock.NewLock("uncommitted", pools, redlock.WithTTL(10*time.Second), redlock.WithFencing(true), redlock.WithRetryTimes(0))
	ctx := ctxT(t, 20*time.Second)
	warmUp(t, ctx, l)
	// The warm-up's last deletes (a late node's, a cleaner's) must be
	// counted before the break is set.
	prev := int64(-1)
	waitFor(t, 5*time.Second, "the warm-up's commands to settle", func() bool {
		n := faulty[1].Commands.Load() + faulty[2].Commands.Load()
		settled := n == prev && countHolders(t, c, "uncommitted") == 0
		prev = n
		time.Sleep(100 * time.Millisecond)
		return settled
	})
	for _, p := range faulty[1:] { // the acquire passes, the commit does not
		p.BreakAfter.Store(p.Commands.Load() + 1)
	}
	_, err := l.TryAcquire(ctx)
	if !errors.Is(err, redlock.ErrFenceNotCommitted) || !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire = %v, want ErrFenceNotCommitted and ErrNotAcquired", err)
	}
	if l.Fence() != 0 {
		t.Fatalf("Fence after a failed commit = %d", l.Fence())
	}
	for _, p := range faulty[1:] {
		p.BreakAfter.Store(0)
	}
	waitFor(t, 10*time.Second, "the attempt's keys to be deleted", func() bool {
		return countHolders(t, c, "uncommitted") == 0
	})
}

// TestFenceCommitPastValidity: nodes so slow that the validity runs out
// during the write-back (the client's clock is an hour behind, so the
// acquire round commits nothing): the token does not count.
func TestFenceCommitPastValidity(t *testing.T) {
	t.Cleanup(fenceclock.Skew(-time.Hour)) // no commit in the acquire round
	_, raw := cluster(t, 3)
	pools, faulty := withFaults(raw)
	l, _ := redlock.NewLock("slow", pools, redlock.WithTTL(300*time.Millisecond), redlock.WithNodeTimeout(290*time.Millisecond),
		redlock.WithFencing(true), redlock.WithRetryTimes(0), redlock.WithAutoextend(false))
	ctx := ctxT(t, 10*time.Second)
	warmUp(t, ctx, l)
	for _, p := range faulty {
		p.DelayNanos.Store(int64(200 * time.Millisecond))
	}
	_, err := l.TryAcquire(ctx)
	if !errors.Is(err, redlock.ErrFenceNotCommitted) {
		t.Fatalf("TryAcquire = %v, want ErrFenceNotCommitted", err)
	}
	for _, p := range faulty {
		p.DelayNanos.Store(0)
	}
}

// TestDoPassesTheFence: Factory.Do puts the holding's token in fn's
// context, and nothing without fencing.
func TestDoPassesTheFence(t *testing.T) {
	_, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	f, _ := redlock.NewFactory(pools, redlock.WithTTL(10*time.Second))
	defer f.Close()
	var got []int64
	fn := func(ctx context.Context) error {
		tok, ok := redlock.FenceFrom(ctx)
		if ok != (tok > 0) {
			t.Errorf("FenceFrom = %d, %v", tok, ok)
		}
		got = append(got, tok)
		return nil
	}
	if _, ok := redlock.FenceFrom(ctx); ok {
		t.Fatal("FenceFrom outside Do reports a token")
	}
	for _, on := range []bool{false, true, true} {
		if err := f.Do(ctx, "job", fn, redlock.WithFencing(on)); err != nil {
			t.Fatal(err)
		}
	}
	if got[0] != 0 || got[1] <= 0 || got[2] <= got[1] {
		t.Fatalf("tokens seen by fn = %v, want 0, then increasing", got)
	}
}

// warmUp acquires and releases l once, so that the scripts are loaded and
// the node list checked before a test counts commands or slows replies.
func warmUp(t *testing.T, ctx context.Context, l *redlock.Lock) {
	t.Helper()
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestFenceRounds counts the scripts the nodes ran: with the client's clock
// close to the nodes' the acquire commits the token itself (one script per
// node per acquisition); with it an hour ahead or behind, every acquisition
// needs the write-back round, and the tokens still grow.
func TestFenceRounds(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 20*time.Second)
	cr := &checkRounds{}
	f, err := redlock.NewFactory(pools, redlock.WithTTL(10*time.Second), redlock.WithFencing(true), redlock.WithAutoextend(false), cr.observer(redlock.Observer{}))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l := f.NewLock("rounds")
	warmUp(t, ctx, l)
	var last int64
	for _, tc := range []struct {
		skew    time.Duration
		scripts int64 // per node per cycle: acquire, commit, release
	}{{0, 2}, {-time.Hour, 3}, {time.Hour, 3}, {0, 2}} {
		restore := fenceclock.Skew(tc.skew)
		checks := resetStats(t, c, cr)
		const cycles = 5
		for range cycles {
			if _, err := l.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			if l.Fence() <= last {
				t.Fatalf("skew %v: token %d is not above %d", tc.skew, l.Fence(), last)
			}
			last = l.Fence()
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		restore()
		settled(t, c)
		// A holding that outlived the loss detector's trackDelay was
		// checked: one script per node and check round.
		for i := range c.Nodes {
			want := cycles*tc.scripts + int64(cr.on(i)-checks[i])
			if got := scriptCalls(t, c, i); got != want {
				t.Fatalf("skew %v: node %d ran %d scripts in %d cycles, want %d", tc.skew, i, got, cycles, want)
			}
		}
	}
}

// settled waits until no node has a command in flight from this test's
// locks: every node's key count and processed-command count stop moving.
func settled(t *testing.T, c *redistest.Cluster) {
	t.Helper()
	prev := int64(-1)
	waitFor(t, 5*time.Second, "the nodes to settle", func() bool {
		var n int64
		for i := range c.Nodes {
			n += scriptCalls(t, c, i)
		}
		ok := n == prev
		prev = n
		time.Sleep(50 * time.Millisecond)
		return ok
	})
}

// resetStats waits until the nodes have settled, resets their command
// counts, and returns how many check calls of the loss detector each node
// has answered (cr): each is one script.
func resetStats(t *testing.T, c *redistest.Cluster, cr *checkRounds) []int {
	t.Helper()
	settled(t, c)
	for _, n := range c.Nodes {
		n.Do("CONFIG", "RESETSTAT")
	}
	checks := make([]int, len(c.Nodes))
	for i := range checks {
		checks[i] = cr.on(i)
	}
	return checks
}

// scriptCalls is node i's count of EVALSHA and EVAL calls since its last
// CONFIG RESETSTAT.
func scriptCalls(t *testing.T, c *redistest.Cluster, i int) int64 {
	t.Helper()
	return commandCalls(t, c, i, "evalsha", "eval")
}

// commandCalls is node i's count of calls of the commands since its last
// CONFIG RESETSTAT; Redis counts the commands that scripts run too.
func commandCalls(t *testing.T, c *redistest.Cluster, i int, commands ...string) int64 {
	t.Helper()
	info, err := redis.String(c.Nodes[i].Do("INFO", "commandstats"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(info, "\r\n") {
		for _, name := range commands {
			cmd := "cmdstat_" + name + ":calls="
			if rest, ok := strings.CutPrefix(line, cmd); ok {
				n, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
				if err != nil {
					t.Fatalf("node %d: %q: %v", i, line, err)
				}
				total += n
			}
		}
	}
	return total
}
