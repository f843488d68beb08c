package failover

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/redlocktest"
)

// nodes is the cluster size of the suite; the quorum is 3.
const nodes = 5

// suite is the state the scenarios share: one cluster of five nodes. Every
// scenario uses lock names of its own and undoes its faults.
type suite struct {
	c     *redlocktest.Cluster
	short bool
}

// TestSafety runs the scenarios of issue 4 on one 5-node cluster.
func TestSafety(t *testing.T) {
	// Node 0 runs on a clock the suite steps (scenario 14).
	c := redlocktest.Start(t, nodes, redlocktest.WithClockShim(0))
	t.Logf("backend: %s", c.Backend())
	s := &suite{c: c, short: testing.Short()}
	// The nodes persist nothing, so to the node guard they have just
	// restarted: they vote once they have run for the longest TTL of the
	// scenarios (10 s, scenario 10).
	waited := s.waitVoting(t, factory(t, c.Pools(), redlock.WithTTL(10*time.Second)))
	t.Logf("the fresh nodes vote for a TTL of 10s after %v", waited.Round(time.Millisecond))
	t.Run("01_contention", s.contention)
	t.Run("02_lost_update_witness", s.lostUpdate)
	t.Run("03_minority_faults", s.minorityFaults)
	t.Run("04_majority_unreachable", s.majorityUnreachable)
	t.Run("05_crashed_holder", s.crashedHolder)
	t.Run("06_restart_without_persistence", s.restartWithoutPersistence)
	t.Run("07_slow_node", s.slowNode)
	t.Run("08_connection_resets", s.connectionResets)
	t.Run("09_partitioned_autoextending_holder", s.partitionedHolder)
	t.Run("10_checker_sensitivity", s.checkerSensitivity)
	t.Run("11_fencing", s.fencing)
	t.Run("12_recipes", s.recipes)
	t.Run("13_empty_restarts_under_contention", s.emptyRestarts)
	t.Run("14_clock_step", s.clockStep)
	t.Run("15_restart_guard_cost", s.restartGuardCost)
	if clientName() == "redigo" {
		for _, c := range otherClients {
			t.Run("over_"+c, func(t *testing.T) { s.overClient(t, c) })
		}
	}
}

// overClient runs, over the named client (see nodesFor) on the same
// cluster, the scenarios where a client's own queueing, retries and
// reconnection meet the faults: minority faults (each client orders and
// times out its commands in its own way; kills make it reconnect),
// connection resets, and fencing under faults. The whole suite runs over
// it with REDLOCK_FAILOVER_CLIENT; this keeps every run of the suite
// honest about all three clients at a fraction of the time.
func (s *suite) overClient(t *testing.T, client string) {
	t.Setenv(clientEnv, client)
	// Scenario 8's TTL is 10 s, and the scenarios before killed nodes:
	// they vote for it once they have run for 10 s.
	s.waitVoting(t, factory(t, s.c.Pools(), redlock.WithTTL(10*time.Second)))
	// WithPipelining chooses between redigo's paths; a client's nodes
	// have one.
	t.Run("08_connection_resets", func(t *testing.T) { s.connectionResetsOn(t, "over_"+client, true) })
	t.Run("03_minority_faults", s.minorityFaults)
	t.Run("11_fencing_under_faults", func(t *testing.T) { s.fencingUnderFaults(t, "11 fencing under faults") })
}

// waitVoting waits until every node votes for f's locks, as
// Factory.Health says, and returns how long that took.
func (s *suite) waitVoting(t *testing.T, f *redlock.Factory) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		hs, err := f.Health(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hs {
			if !h.Voting {
				out = append(out, h.Addr+": "+h.Why)
			}
		}
		if len(out) == 0 {
			return time.Since(start)
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("nodes still out of the vote after 30 s: %s", strings.Join(out, "; "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pick returns full, or quick under -short.
func (s *suite) pick(full, quick int) int {
	if s.short {
		return quick
	}
	return full
}

func (s *suite) dur(full, quick time.Duration) time.Duration {
	if s.short {
		return quick
	}
	return full
}

// factory returns a factory whose TryAcquire makes one attempt and whose
// locks do not autoextend, unless opts say otherwise, over the client
// that REDLOCK_FAILOVER_CLIENT names (see nodesFor). It is closed at the
// end of the test.
func factory(t *testing.T, pools []redlock.Pool, opts ...redlock.Option) *redlock.Factory {
	t.Helper()
	base := []redlock.Option{redlock.WithRetryTimes(0), redlock.WithAutoextend(false)}
	f, err := redlock.NewFactoryFromNodes(nodesFor(t, pools), append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// finish logs the figures and fails on overlaps and lost updates.
func (s *suite) finish(t *testing.T, r report, h *history, start time.Time) report {
	t.Helper()
	r.Backend = string(s.c.Backend())
	r.Wall = time.Since(start)
	r.log(t)
	for i, o := range h.overlaps() {
		if i == 5 {
			break
		}
		t.Errorf("overlap: %v", o)
	}
	if r.LostUpdates > 0 {
		t.Errorf("%d lost updates", r.LostUpdates)
	}
	return r
}

// holdUniform holds the lock for a random time below max.
func holdUniform(max time.Duration) func(*rand.Rand) time.Duration {
	return func(r *rand.Rand) time.Duration { return time.Duration(r.Int64N(int64(max))) }
}

// run starts w, waits for its target or for d, and stops it.
func run(w workload, h *history, d time.Duration) {
	stop, reached := w.start(h)
	select {
	case <-reached:
	case <-time.After(d):
	}
	stop()
}

// do runs a command on node i with a deadline.
func (s *suite) do(i int, cmd string, args ...any) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := s.c.Pools()[i].GetContext(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return redis.DoContext(conn, ctx, cmd, args...)
}

// keys returns the keys matching pattern on every node.
func (s *suite) keys(t *testing.T, pattern string) [][]string {
	t.Helper()
	out := make([][]string, nodes)
	for i := range nodes {
		ks, err := redis.Strings(s.do(i, "KEYS", pattern))
		if err != nil {
			t.Fatalf("KEYS on node %d: %v", i, err)
		}
		out[i] = ks
	}
	return out
}

// 1. Contention with no faults: at least 5,000 acquisitions.
func (s *suite) contention(t *testing.T) {
	start := time.Now()
	target := s.pick(5000, 1000)
	f := factory(t, s.c.Pools(), redlock.WithTTL(10*time.Second))
	h := newHistory()
	w := workload{
		clients: 16, names: []string{"s1:a", "s1:b", "s1:c", "s1:d"},
		newLocker: libLockers(f), retryDelay: 4 * time.Millisecond,
		hold: holdUniform(time.Millisecond), witness: true, target: target,
	}
	run(w, h, 4*time.Minute)
	r := s.finish(t, h.figures("1 contention, no faults", w.clients), h, start)
	if r.Successes < target {
		t.Errorf("%d acquisitions, want at least %d", r.Successes, target)
	}
}

// 2. Lost-update witness: a read-sleep-write counter kept in Redis and
// guarded by the lock loses no update.
func (s *suite) lostUpdate(t *testing.T) {
	start := time.Now()
	const key = "s2:counter"
	f := factory(t, s.c.Pools(), redlock.WithTTL(5*time.Second))
	h := newHistory()
	var writes, sectionErrs atomic.Int64
	w := workload{
		clients: 8, names: []string{"s2:lock"}, newLocker: libLockers(f),
		retryDelay: 5 * time.Millisecond, target: s.pick(400, 150),
		section: func(_ string, _ int64, end time.Duration, rng *rand.Rand) {
			n, err := redis.Int64(s.do(4, "GET", key))
			if err != nil && !errors.Is(err, redis.ErrNil) {
				sectionErrs.Add(1)
				return
			}
			time.Sleep(time.Millisecond + time.Duration(rng.Int64N(int64(2*time.Millisecond))))
			if now() >= end {
				return
			}
			if _, err := s.do(4, "SET", key, n+1); err != nil {
				sectionErrs.Add(1)
				return
			}
			writes.Add(1)
		},
	}
	run(w, h, 3*time.Minute)
	got, err := redis.Int64(s.do(4, "GET", key))
	if err != nil {
		t.Fatal(err)
	}
	r := h.figures("2 lost-update witness (counter in Redis)", w.clients)
	r.LostUpdates = int(writes.Load() - got)
	r.Note = fmt.Sprintf("%d increments, counter %d", writes.Load(), got)
	s.finish(t, r, h, start)
	if sectionErrs.Load() > 0 {
		t.Errorf("%d counter commands failed", sectionErrs.Load())
	}
	if writes.Load() < int64(w.target)/2 {
		t.Errorf("only %d increments", writes.Load())
	}
}

// 3. A minority (2 of 5) killed, paused or partitioned, rotating: no
// overlap, and acquisitions keep succeeding during every fault. Killed
// nodes stay down longer than the TTL, as Redlock requires of a node
// without persistence.
func (s *suite) minorityFaults(t *testing.T) {
	start := time.Now()
	const ttl = time.Second
	window := 1500 * time.Millisecond // > ttl
	f := factory(t, s.c.Pools(), redlock.WithTTL(ttl))
	h := newHistory()
	w := workload{
		clients: 16, names: []string{"s3:a", "s3:b"}, newLocker: libLockers(f),
		retryDelay: 20 * time.Millisecond, hold: holdUniform(2 * time.Millisecond), witness: true,
	}
	stop, _ := w.start(h)
	defer stop()
	pairs := [][2]int{{0, 1}, {2, 3}, {4, 0}, {1, 2}, {3, 4}, {0, 2}}
	kinds := []string{"kill", "pause", "partition"}
	var notes []string
	for k := range s.pick(6, 3) {
		p, kind := pairs[k%len(pairs)], kinds[k%len(kinds)]
		from := now()
		for _, i := range p {
			switch kind {
			case "kill":
				s.c.Kill(i)
			case "pause":
				s.c.Pause(i)
			case "partition":
				s.c.Partition(i)
			}
		}
		time.Sleep(window)
		to := now()
		for _, i := range p {
			switch kind {
			case "kill":
				s.c.Restart(i)
			case "pause":
				s.c.Unpause(i)
			case "partition":
				s.c.Heal(i)
			}
		}
		n := h.successesIn(from, to)
		notes = append(notes, fmt.Sprintf("%s %v: %d", kind, p, n))
		if n == 0 {
			t.Errorf("no acquisition while nodes %v were %s; failed attempts by cause: %v; the first error of each cause: %q",
				p, kind, h.failuresIn(from, to), h.failureExamplesIn(from, to))
		}
		// Commands a paused node queued run when it resumes, and a SET of an
		// attempt abandoned long ago then holds its key for a TTL: a
		// liveness cost Redlock accepts. Let such keys expire before the
		// next window, so that each window measures its own fault.
		time.Sleep(ttl)
	}
	stop()
	r := h.figures("3 minority faults, rotating", w.clients)
	r.Note = fmt.Sprintf("acquisitions per fault window: %v", notes)
	s.finish(t, r, h, start)
}

// 4. A majority unreachable: no acquisition during the fault, and locks
// can be had again within TTL + retry delay after healing.
func (s *suite) majorityUnreachable(t *testing.T) {
	start := time.Now()
	const ttl, retry = time.Second, 50 * time.Millisecond
	f := factory(t, s.c.Pools(), redlock.WithTTL(ttl))
	h := newHistory()
	w := workload{
		clients: 8, names: []string{"s4"}, newLocker: libLockers(f),
		retryDelay: retry, hold: holdUniform(2 * time.Millisecond),
	}
	stop, _ := w.start(h)
	defer stop()
	time.Sleep(500 * time.Millisecond)
	for i := range 3 {
		s.c.Partition(i)
	}
	partitioned := now()
	time.Sleep(s.dur(2500*time.Millisecond, 1500*time.Millisecond))
	healing := now()
	for i := range 3 {
		s.c.Heal(i)
	}
	healed := now()
	time.Sleep(1500 * time.Millisecond)
	stop()
	during := h.successesIn(partitioned, healing)
	first, ok := h.firstSuccessAfter(healed)
	r := h.figures("4 majority unreachable", w.clients)
	r.Detect = first - healed
	r.Note = fmt.Sprintf("%d acquisitions during the partition; first acquisition %v after healing (bound ttl+retry = %v)",
		during, (first - healed).Round(time.Millisecond), ttl+retry)
	s.finish(t, r, h, start)
	if during != 0 {
		t.Errorf("%d acquisitions while 3 of 5 nodes were unreachable", during)
	}
	if !ok || first-healed > ttl+retry {
		t.Errorf("first acquisition after healing: %v (found %v), want within %v", first-healed, ok, ttl+retry)
	}
}

// availabilitySlack bounds how long after a holder's validity ends the
// next holder gets in when the guard keeps out only a minority: the keys'
// expiry (drift and the holder's acquire time), a retry delay and a
// loaded machine.
const availabilitySlack = 500 * time.Millisecond

// 6. A node restart without persistence. An immediate restart of a node
// that held the lock: the node guard keeps it out of the vote, so no second
// holder; with the guard off (WithRestartGuard(0)) it lets one in, which
// the checker must detect (negative control). A restart delayed beyond the
// TTL gives no overlap and loses no availability.
func (s *suite) restartWithoutPersistence(t *testing.T) {
	const ttl = 3 * time.Second
	for _, v := range []struct {
		name             string
		delayed, guarded bool
	}{{"immediate", false, true}, {"immediate_unguarded", false, false}, {"delayed", true, true}} {
		name, delayed := v.name, v.delayed
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			lock := "s6:" + name
			h := newHistory()
			// A reaches nodes 0, 1 and 2 only, so its lock lives on those.
			a := s.c.NewClient()
			a.Partition(3)
			a.Partition(4)
			// A does not hear of the restart (no loss detection): it holds
			// on, as a holder busy in its critical section does.
			fa := factory(t, a.Pools(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(50*time.Millisecond), redlock.WithLossDetection(false))
			s.waitVoting(t, factory(t, s.c.Pools(), redlock.WithTTL(ttl))) // node 0 may have restarted in the variant before
			la := fa.NewLock(lock)
			t1, va := acquireOnce(t, h, la, "3 of 5 nodes")
			// A decided at quorum while its SETs to nodes 3 and 4 were
			// still waiting on the partition; let them fail (dial and
			// node timeouts) before healing, or one may land afterwards.
			time.Sleep(500 * time.Millisecond)
			a.Heal(3)
			a.Heal(4)
			ks := s.keys(t, lock)
			if len(ks[0]) != 1 || len(ks[3]) != 0 || len(ks[4]) != 0 {
				t.Fatalf("A's key should be on nodes 0-2 only: %v", ks)
			}
			fb := factory(t, s.c.Pools(), redlock.WithTTL(ttl))
			if !v.guarded {
				fb = factory(t, s.c.Pools(), redlock.WithTTL(ttl), redlock.WithRestartGuard(0))
			}
			w := workload{clients: 4, names: []string{lock}, newLocker: libLockers(fb),
				retryDelay: 20 * time.Millisecond, hold: holdUniform(time.Millisecond), target: 1}
			var restarted time.Duration
			if delayed {
				s.c.Kill(0)
				stop, reached := w.start(h)
				time.Sleep(ttl + 300*time.Millisecond) // node 0 stays down longer than the TTL
				s.c.Restart(0)
				restarted = now()
				select {
				case <-reached:
				case <-time.After(2 * ttl):
				}
				stop()
			} else {
				s.c.Restart(0) // kill and start at once: A's key on node 0 is gone
				restarted = now()
				run(w, h, ttl)
			}
			if v.guarded {
				// The guard's availability cost: node 0 is out of the vote
				// until its process has run for the TTL.
				s.waitVoting(t, fb)
				back := now() - restarted
				t.Logf("node 0 votes again %v after its restart (window %v, uptime in whole seconds)", back.Round(time.Millisecond), ttl)
			}
			h.hold(lock, la.Token(), t1, t1+va)
			_ = la.Release(context.Background())
			r := h.figures("6 restart without persistence, "+name, 1+w.clients)
			first, ok := h.firstSuccessAfter(t1)
			r.Detect = first - t1
			r.Note = fmt.Sprintf("A's validity %v; B acquired %v after A (found %v); node 0 back %v after A acquired",
				va.Round(time.Millisecond), (first - t1).Round(time.Millisecond), ok, (restarted - t1).Round(time.Millisecond))
			r.Backend = string(s.c.Backend())
			r.Wall = time.Since(start)
			r.log(t)
			ov := h.overlaps()
			switch {
			case v.guarded:
				for _, o := range ov {
					t.Errorf("overlap after a %s restart under the node guard: %v", name, o)
				}
				// No availability lost: B gets in as soon as A's keys on
				// nodes 1 and 2 expire, on nodes 1-4, whether node 0 is
				// down or out of the vote.
				if late := first - (t1 + va); !ok || late > availabilitySlack {
					t.Errorf("B acquired %v after A's validity ended (found %v), want within %v", late, ok, availabilitySlack)
				}
				// What kept B out of the immediate variant is the guard:
				// node 0, empty, would have given B a quorum with 3 and 4.
				if !delayed && r.Failures["not voting"] == 0 {
					t.Errorf("no attempt of B met node 0 out of the vote: the scenario did not test the guard (failures %v)", r.Failures)
				}
			default:
				if len(ov) == 0 {
					t.Errorf("negative control: an immediate restart let B in (found %v) but the checker saw no overlap", ok)
				} else {
					t.Logf("negative control detected as expected: %v", ov[0])
				}
			}
		})
	}
}

// 7. A slow node: with one node slower than the node timeout, acquire
// latency stays near the fast nodes' latency; with a quorum slowed below the
// node timeout, the validity reported accounts for the time the acquire took.
func (s *suite) slowNode(t *testing.T) {
	start := time.Now()
	const ttl, nodeTimeout = 2 * time.Second, 100 * time.Millisecond
	drift := time.Duration(float64(ttl)*redlock.DefaultDriftFactor) + 2*time.Millisecond
	f := factory(t, s.c.Pools(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
	phase := func(lock string) *history {
		h := newHistory()
		w := workload{clients: 8, names: []string{lock}, newLocker: libLockers(f),
			retryDelay: 5 * time.Millisecond, hold: holdUniform(time.Millisecond)}
		run(w, h, s.dur(1500*time.Millisecond, time.Second))
		return h
	}
	fast := phase("s7:fast")
	const slow = 3 * nodeTimeout
	s.c.Delay(0, slow)
	slowed := phase("s7:slow")
	s.c.Delay(0, 0)
	hf, hs := fast.figures("", 8), slowed.figures("", 8)

	// A quorum slowed by less than the node timeout: every acquire takes at
	// least that long, and its validity must say so. These locks have a
	// node timeout far above the lag: with 100 ms against 60 ms, a stall of
	// 40 ms in this process, which runs the proxies too, failed an acquire
	// once under CI load. Their factory's connections are up before the
	// lag (see the report of issue 4 for the first dial to a slow node on
	// the pipelined path).
	const lag = 60 * time.Millisecond
	lagged := factory(t, s.c.Pools(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(time.Second))
	warm := lagged.NewLock("s7:validity:warm")
	if _, err := warm.TryAcquire(context.Background()); err != nil {
		t.Fatalf("acquire with every node fast: %v", err)
	}
	_ = warm.Release(context.Background())
	for i := range 3 {
		s.c.Delay(i, lag)
	}
	var worst time.Duration // largest validity + elapsed seen; must stay below ttl - drift - lag
	for k := range 10 {
		l := lagged.NewLock("s7:validity:" + strconv.Itoa(k))
		t0 := time.Now()
		v, err := l.TryAcquire(context.Background())
		elapsed := time.Since(t0)
		slowed.attempt(now()-elapsed, now(), err)
		if err != nil {
			t.Errorf("acquire with a quorum %v slow failed after %v: %v", lag, elapsed, err)
			continue
		}
		if v > ttl-drift-lag {
			t.Errorf("validity %v after an acquire of %v: the elapsed time was not subtracted (ttl %v, drift %v)", v, elapsed, ttl, drift)
		}
		if v < ttl-drift-elapsed {
			t.Errorf("validity %v is below ttl - drift - elapsed = %v", v, ttl-drift-elapsed)
		}
		worst = max(worst, v+lag)
		_ = l.Release(context.Background())
	}
	for i := range 3 {
		s.c.Delay(i, 0)
	}
	r := slowed.figures("7 slow node", 8)
	r.Note = fmt.Sprintf("acquire p50/p99 with all nodes fast %v/%v, with node 0 %v slow (node timeout %v) %v/%v; with 3 nodes %v slow, max validity+lag %v <= ttl-drift %v",
		hf.P50.Round(10*time.Microsecond), hf.P99.Round(10*time.Microsecond), slow, nodeTimeout,
		hs.P50.Round(10*time.Microsecond), hs.P99.Round(10*time.Microsecond), lag, worst.Round(time.Millisecond), ttl-drift)
	s.finish(t, r, slowed, start)
	if hs.Successes == 0 || hs.P50 >= nodeTimeout {
		t.Errorf("with one slow node: %d acquisitions, p50 %v; the acquire must not wait for the slow node (node timeout %v)", hs.Successes, hs.P50, nodeTimeout)
	}
	if len(fast.overlaps()) > 0 {
		t.Errorf("overlaps without faults: %v", fast.overlaps())
	}
}

// 8. Connection resets after the SET was sent (the node executes the
// command, the client loses the reply): a failed attempt leaves no orphan
// key once cleaned up, and never deletes another holder's key. It runs on
// both of the library's connection paths: one shared pipelined connection
// per node (the default) and a pool connection per command.
func (s *suite) connectionResets(t *testing.T) {
	for _, pipelined := range []bool{true, false} {
		name := map[bool]string{true: "pipelined", false: "pool"}[pipelined]
		t.Run(name, func(t *testing.T) { s.connectionResetsOn(t, name, pipelined) })
	}
}

// setCalls is how many SET commands node i has executed.
func (s *suite) setCalls(t *testing.T, i int) int64 {
	t.Helper()
	info, err := redis.String(s.do(i, "INFO", "commandstats"))
	if err != nil {
		t.Fatalf("INFO on node %d: %v", i, err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_set:calls="); ok {
			n, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
			return n
		}
	}
	return 0
}

func (s *suite) connectionResetsOn(t *testing.T, path string, pipelined bool) {
	start := time.Now()
	prefix := "s8:" + path + ":"
	f := factory(t, s.c.Pools(), redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(200*time.Millisecond),
		redlock.WithPipelining(pipelined))
	h := newHistory()
	phase := func(lock string, d time.Duration) {
		w := workload{clients: 8, names: []string{prefix + lock}, newLocker: libLockers(f),
			retryDelay: 50 * time.Millisecond, hold: holdUniform(2 * time.Millisecond), witness: true}
		run(w, h, d)
	}
	var cutSets int64 // SETs executed by nodes whose replies were cut
	cut := func(ns ...int) func() {
		before := make([]int64, len(ns))
		for k, i := range ns {
			before[k] = s.setCalls(t, i)
			s.c.CutReplies(i)
		}
		return func() {
			for k, i := range ns {
				s.c.Heal(i)
				cutSets += s.setCalls(t, i) - before[k]
			}
		}
	}
	// A minority loses its replies: locks are still acquired and released.
	heal := cut(0, 1)
	phase("minority", s.dur(2*time.Second, time.Second))
	heal()
	minority := h.successCount()

	// A holder keeps its lock while a majority loses replies and others try.
	holder := f.NewLock(prefix + "held")
	if _, err := holder.TryAcquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	var holds []int // the nodes the holder's key is on
	for i := range nodes {
		if v, err := redis.String(s.do(i, "GET", prefix+"held")); err == nil && v == holder.Token() {
			holds = append(holds, i)
		}
	}
	if len(holds) < 3 {
		t.Fatalf("the holder's key is on nodes %v only", holds)
	}
	heal = cut(0, 1, 2)
	before := h.successCount()
	phase("held", time.Second)
	stolen := h.successCount() - before
	// Nobody holds this one: every attempt fails after setting keys.
	phase("free", time.Second)
	free := h.successCount() - before - stolen
	heal()
	for _, i := range holds {
		v, err := redis.String(s.do(i, "GET", prefix+"held"))
		if err != nil || v != holder.Token() {
			t.Errorf("node %d: the holder's key is %q, %v; a failed attempt deleted or replaced it", i, v, err)
		}
	}
	if err := holder.Release(context.Background()); err != nil {
		t.Errorf("holder's release: %v", err)
	}
	_ = f.Close() // waits for the cleanups still running
	orphans, stale := 0, 0
	for i, ks := range s.keys(t, prefix+"*") {
		for _, k := range ks {
			if v, _ := redis.String(s.do(i, "GET", k)); k == prefix+"held" && v == holder.Token() {
				// Left by the holder's successful Release on a node that
				// had not answered when the release reached its quorum:
				// Release retries only the nodes that failed before it
				// decided. Not a failed attempt's key; it expires with the
				// TTL (docs/SAFETY.md, "Findings"). Logged, not failed on,
				// until Release also retries such nodes.
				stale++
				t.Logf("node %d: the released holder's key is still there", i)
				continue
			}
			orphans++
			v, _ := redis.String(s.do(i, "GET", k))
			pttl, _ := redis.Int64(s.do(i, "PTTL", k))
			t.Errorf("node %d: orphan key %s (token %s, pttl %dms, held by a holder: %v)", i, k, short(v), pttl, h.held(v))
		}
	}
	r := h.figures("8 connection resets after SET, "+path, 8)
	r.Orphans = orphans
	r.Note = fmt.Sprintf("%d SETs executed with their replies cut; %d acquisitions with 2 nodes losing replies; %d while another held the lock and 3 lost replies; %d of a free lock with 3 losing replies; %d keys left by the holder's successful Release",
		cutSets, minority, stolen, free, stale)
	s.finish(t, r, h, start)
	if minority == 0 || stolen != 0 || free != 0 {
		t.Errorf("acquisitions: %d with a minority cut (want > 0), %d stolen and %d without a quorum (want 0)", minority, stolen, free)
	}
	if cutSets == 0 {
		t.Errorf("no SET reached a node whose replies were cut: the scenario tested nothing")
	}
}

// 9. A holder partitioned away from the majority while autoextending: Done
// closes and Err is ErrLockLost before its validity could let anyone else
// in, and before anyone else acquires.
func (s *suite) partitionedHolder(t *testing.T) {
	start := time.Now()
	// A 4 s TTL gives a drift allowance of 42 ms: the lead Done has over
	// the next holder, whom the keys' expiry lets in, despite a late timer
	// on a busy machine.
	const ttl = 4 * time.Second
	hc := s.c.NewClient()
	fh := factory(t, hc.Pools(), redlock.WithTTL(ttl), redlock.WithAutoextend(true))
	fo := factory(t, s.c.Pools(), redlock.WithTTL(ttl))
	h := newHistory()
	lh := fh.NewLock("s9")
	t0 := now()
	if _, err := lh.TryAcquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	t1 := now()
	h.attempt(t0, t1, nil)
	w := workload{clients: 8, names: []string{"s9"}, newLocker: libLockers(fo),
		retryDelay: 20 * time.Millisecond, hold: holdUniform(time.Millisecond)}
	stop, _ := w.start(h)
	defer stop()
	time.Sleep(ttl + ttl/2) // autoextension keeps it past its first TTL
	kept := h.successCount() == 1
	partitioned := now()
	for i := range 3 {
		hc.Partition(i)
	}
	var done time.Duration
	select {
	case <-lh.Done():
		done = now()
	case <-time.After(2 * ttl):
		t.Fatal("Done did not close within 2 TTL of the partition")
	}
	lostErr := lh.Err()
	deadline := time.Now().Add(2 * ttl)
	var other time.Duration
	var ok bool
	for time.Now().Before(deadline) {
		if other, ok = h.firstSuccessAfter(partitioned); ok {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	for i := range 3 {
		hc.Heal(i)
	}
	h.hold("s9", lh.Token(), t1, done)
	_ = lh.Release(context.Background())
	r := h.figures("9 partitioned autoextending holder", 1+w.clients)
	r.Detect = done - partitioned
	r.Note = fmt.Sprintf("Done closed %v after the partition; the next holder acquired %v after that", (done - partitioned).Round(time.Millisecond), (other - done).Round(time.Millisecond))
	s.finish(t, r, h, start)
	if !kept {
		t.Errorf("others acquired while the holder was autoextending")
	}
	if !errors.Is(lostErr, redlock.ErrLockLost) {
		t.Errorf("Err() = %v, want ErrLockLost", lostErr)
	}
	if done-partitioned > ttl {
		t.Errorf("loss detected %v after the partition, more than the TTL %v", done-partitioned, ttl)
	}
	if !ok {
		t.Errorf("nobody acquired the lock after the holder lost it")
	} else if other <= done {
		t.Errorf("another client acquired %v before Done closed", done-other)
	}
}
