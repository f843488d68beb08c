package failover

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

// The node guard's scenarios (docs/SAFETY.md, "The node guard"): holders
// on bare quorums, that is on exactly 3 of the 5 nodes, lose their keys on
// a node restarted empty (13) or on a node whose clock steps past their
// TTL (14); with the guard, that node does not vote until the holding is
// over, and with the guard off a second holder gets in, which the checker
// must flag (the negative controls). 15 measures what the restart guard
// costs a 5-node cluster in availability.

// guardTTL is the TTL of scenarios 14 and 15: the restart guard
// keeps a restarted node out for as long, so it is short.
const guardTTL = 2 * time.Second

// voteBound bounds how long after its restart a node votes again for a
// lock of ttl: the window (the TTL), plus up to a second because INFO's
// uptime_in_seconds is the difference of the wall clock's whole seconds
// now and at the start, plus a loaded machine.
func voteBound(ttl time.Duration) time.Duration { return ttl + 2*time.Second }

// waitNodesVote waits until Health of a factory of its own, for a lock of
// guardTTL, says every node votes, and returns when that was on the
// suite's clock. It is a factory of its own because Health reads the
// nodes' facts, which the guard of a factory without pipelined
// connections would then go by.
func (s *suite) waitNodesVote(t *testing.T) time.Duration {
	t.Helper()
	s.waitVoting(t, factory(t, s.c.Pools(), redlock.WithTTL(guardTTL)))
	return now()
}

// waitSuccess waits until h has a successful acquire that ended after
// from and returns its end; it fails the test after timeout.
func waitSuccess(t *testing.T, h *history, from, timeout time.Duration, what string) time.Duration {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if at, ok := h.firstSuccessAfter(from); ok {
			return at
		}
		if time.Now().After(deadline) {
			t.Fatalf("no acquisition %s within %v", what, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// heldSection is a critical section with the lost-update witness: it
// reads the lock's counter, holds the lock until margin before its
// validity ends, and writes the counter plus one if the validity has not
// ended. A holding ends early once quit is closed.
func heldSection(h *history, margin time.Duration, quit <-chan struct{}) func(string, int64, time.Duration, *rand.Rand) {
	return func(name string, _ int64, end time.Duration, _ *rand.Rand) {
		wit := h.witnessFor(name)
		read := wit.value.Load()
		timer := time.NewTimer(end - margin - now())
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-quit:
		}
		if now() < end {
			wit.value.Store(read + 1)
			wit.writes.Add(1)
		}
	}
}

// bareQuorum returns a factory for clients that reach only the three
// nodes of reach and need all three: every holding of theirs lives on a
// bare quorum of the five. It is what a client partitioned away from the
// other two nodes gets, without the node timeout that such a client's
// failed attempts wait on the missing nodes while holding their keys on
// the others, which under contention would keep the other side out more
// than the lock does.
func (s *suite) bareQuorum(t *testing.T, reach []int, opts ...redlock.Option) *redlock.Factory {
	t.Helper()
	all := s.c.Pools()
	pools := make([]redlock.Pool, 0, len(reach))
	for _, i := range reach {
		pools = append(pools, all[i])
	}
	return factory(t, pools, append(opts, redlock.WithQuorum(len(reach)))...)
}

// 13. Immediate empty restarts under contention. Clients A reach nodes
// 0-2 only, clients B reach nodes 0, 3 and 4 (or 0, 1 and 3), so that
// every holding lives on a bare quorum (bareQuorum) and A's and B's
// quorums meet in the nodes restarted: while one of them holds, those
// nodes are killed and started again at once, empty. With the guard they
// do not vote until the holding is over (neither side's guard lets them
// vote before the window has passed since the kill): no overlap, no lost
// update, and the lock is taken again once they vote. With
// WithRestartGuard(0) the other side takes the lock beside the holder:
// the checker must flag the overlap.
func (s *suite) emptyRestarts(t *testing.T) {
	for _, v := range []struct {
		name    string
		restart []int // the nodes both sides' quorums share
		b       []int // the nodes B reaches; A reaches 0, 1 and 2
		guarded bool
	}{
		{"one_node", []int{0}, []int{0, 3, 4}, true},
		{"two_nodes", []int{0, 1}, []int{0, 1, 3}, true},
		{"one_node_unguarded", []int{0}, []int{0, 3, 4}, false},
		{"two_nodes_unguarded", []int{0, 1}, []int{0, 1, 3}, false},
	} {
		t.Run(v.name, func(t *testing.T) { s.emptyRestart(t, v.name, v.restart, v.b, v.guarded) })
	}
}

func (s *suite) emptyRestart(t *testing.T, name string, restart, reachB []int, guarded bool) {
	start := time.Now()
	// A holding lasts its validity, nearly 3 s: the restart takes up to a
	// second, and a go-redis client reconnects to a node that came back up
	// to a second later (its pool stops dialling a node that refused
	// connections, and tries again once a second). The negative control
	// needs the other side to get in while the holding lasts, so it holds
	// for 6 s: a restart of two containers took 3.1 s once on a loaded
	// machine, and the holding had ended before the nodes were back.
	ttl := 3 * time.Second
	if !guarded {
		ttl = 6 * time.Second
	}
	lock := "s13:" + name
	if guarded {
		s.waitVoting(t, factory(t, s.c.Pools(), redlock.WithTTL(ttl))) // the variant before restarted nodes
	}
	// No loss detection: a holder that heard of the loss would end its
	// holding early, and the scenario would prove nothing about one that
	// has not heard.
	opts := []redlock.Option{redlock.WithTTL(ttl), redlock.WithLossDetection(false)}
	if !guarded {
		opts = append(opts, redlock.WithRestartGuard(0))
	}
	// Each side's factory reports when its guard takes a node out of the
	// vote and lets it back in.
	sides := []struct {
		name  string
		reach []int
		votes *voteLog
	}{{"A", []int{0, 1, 2}, new(voteLog)}, {"B", reachB, new(voteLog)}}
	fa := s.bareQuorum(t, sides[0].reach, append(opts, sides[0].votes.option())...)
	fb := s.bareQuorum(t, sides[1].reach, append(opts, sides[1].votes.option())...)
	h := newHistory()
	quit := make(chan struct{})
	var stops []func()
	for _, f := range []*redlock.Factory{fa, fb} {
		w := workload{clients: 3, names: []string{lock}, newLocker: libLockers(f),
			retryDelay: 20 * time.Millisecond, section: heldSection(h, 20*time.Millisecond, quit)}
		stop, _ := w.start(h)
		stops = append(stops, stop)
	}
	stopAll := func() {
		close(quit)
		for _, stop := range stops {
			stop()
		}
	}
	defer func() {
		select {
		case <-quit:
		default:
			stopAll()
		}
	}()
	held := waitSuccess(t, h, 0, 5*time.Second, "of a bare quorum")
	killed := now()
	for _, i := range restart {
		s.c.Kill(i)
	}
	for _, i := range restart {
		s.c.Restart(i)
	}
	restarted := now()
	var back, after time.Duration
	if guarded {
		s.waitVoting(t, factory(t, s.c.Pools(), redlock.WithTTL(ttl)))
		back = now()
		after = waitSuccess(t, h, back, 2*ttl, "once the restarted nodes vote again")
	} else {
		time.Sleep(held + ttl - now()) // the holding has ended: a second holder would have come in by now
	}
	stopAll()
	// When each side's guard let each restarted node vote again: never
	// before the window has passed since the kill, as the new process
	// started after it.
	var rejoins []string
	for _, side := range sides {
		for local, i := range side.reach {
			if !slices.Contains(restart, i) {
				continue
			}
			if v, ok := side.votes.first(local, true, killed); ok {
				rejoins = append(rejoins, fmt.Sprintf("%s lets node %d vote %v after the kill", side.name, i, (v.at-killed).Round(time.Millisecond)))
				if guarded && v.at-killed < ttl {
					t.Errorf("%s's guard let node %d vote again %v after its kill, before the window of %v", side.name, i, v.at-killed, ttl)
				}
			}
		}
	}
	r := h.figures(fmt.Sprintf("13 empty restart of nodes %v under contention, %s", restart, guardName(guarded)), 6)
	r.Note = fmt.Sprintf("A on nodes 0-2, B on %v; the restart began %v after a holding did and took %v",
		reachB, (killed - held).Round(time.Millisecond), (restarted - killed).Round(time.Millisecond))
	if guarded {
		r.Detect = back - killed
		r.Note += fmt.Sprintf("; the nodes vote again %v after the restart began, %v after they answered again (Health), and the lock is taken again %v after that; %d increments",
			(back - killed).Round(time.Millisecond), (back - restarted).Round(time.Millisecond), (after - back).Round(time.Millisecond), h.witnessFor(lock).writes.Load())
		r.Note += "; " + strings.Join(rejoins, ", ")
		s.finish(t, r, h, start)
		if r.Failures["not voting"] == 0 {
			t.Errorf("no attempt met a restarted node out of the vote: the scenario did not test the guard (failures %v)", r.Failures)
		}
		if back-restarted > voteBound(ttl) {
			t.Errorf("the restarted nodes voted again %v after they answered again, want within %v", back-restarted, voteBound(ttl))
		}
		return
	}
	r.Backend, r.Wall = string(s.c.Backend()), time.Since(start)
	r.log(t)
	if ov := h.overlaps(); len(ov) == 0 {
		t.Errorf("negative control: with the restart guard off, the empty restart of %v let no second holder in that the checker saw", restart)
	} else {
		t.Logf("negative control detected as expected: %v (and %d lost updates)", ov[0], r.LostUpdates)
	}
}

// guardName names a variant for the figures.
func guardName(guarded bool) string {
	if guarded {
		return "guarded"
	}
	return "guard off (negative control)"
}

// voteLog records a factory's NodeVote events on the suite's clock.
type voteLog struct {
	mu     sync.Mutex
	events []voteAt
}

type voteAt struct {
	at time.Duration
	e  redlock.NodeVoteEvent
}

func (l *voteLog) option() redlock.Option {
	return redlock.WithObserver(redlock.Observer{NodeVote: func(e redlock.NodeVoteEvent) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.events = append(l.events, voteAt{now(), e})
	}})
}

// count is the number of events of node.
func (l *voteLog) count(node int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, v := range l.events {
		if v.e.Node == node {
			n++
		}
	}
	return n
}

// first returns the first event of node after from with the given Voting.
func (l *voteLog) first(node int, voting bool, from time.Duration) (voteAt, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range l.events {
		if v.at >= from && v.e.Node == node && v.e.Voting == voting {
			return v, true
		}
	}
	return voteAt{}, false
}

// 14. A clock step on a node of a bare quorum. A holds the lock on nodes
// 0-2; node 0's clock steps forward past the TTL, so that A's key there
// expires at once. With the guard, node 0 does not vote (its clock is off
// this client's by the step, the clock guard), and B gets the lock only
// once A's validity has ended; with WithClockGuard(0) and
// WithRestartGuard(0), B takes nodes 0, 3 and 4 beside A: the checker must
// flag the overlap. Node 0 runs on the suite's clock shim.
func (s *suite) clockStep(t *testing.T) {
	for _, guarded := range []bool{true, false} {
		name := map[bool]string{true: "guarded", false: "unguarded"}[guarded]
		t.Run(name, func(t *testing.T) { s.clockStepOn(t, name, guarded) })
	}
}

func (s *suite) clockStepOn(t *testing.T, name string, guarded bool) {
	start := time.Now()
	const ttl = guardTTL
	const step = ttl + time.Second
	lock := "s14:" + name
	s.waitNodesVote(t)
	h := newHistory()
	fa := factory(t, s.clientOn(0, 1, 2), redlock.WithTTL(ttl), redlock.WithNodeTimeout(100*time.Millisecond), redlock.WithLossDetection(false))
	la := fa.NewLock(lock)
	t1, va := acquireOnce(t, h, la, "nodes 0-2")
	defer s.c.SetClockOffset(0, 0)
	s.c.SetClockOffset(0, step)
	stepped := now()
	if ks := s.keys(t, lock); len(ks[0]) != 0 || len(ks[1]) != 1 || len(ks[2]) != 1 || len(ks[3])+len(ks[4]) != 0 {
		t.Fatalf("after node 0's step of %v, A's key should be on nodes 1 and 2 only: %v", step, ks)
	}
	var votes voteLog
	opts := []redlock.Option{redlock.WithTTL(ttl), votes.option()}
	if !guarded {
		opts = append(opts, redlock.WithClockGuard(0), redlock.WithRestartGuard(0))
	}
	fb := factory(t, s.c.Pools(), opts...)
	w := workload{clients: 4, names: []string{lock}, newLocker: libLockers(fb),
		retryDelay: 20 * time.Millisecond, hold: holdUniform(time.Millisecond), target: 1}
	run(w, h, t1+va-now()+time.Second)
	h.hold(lock, la.Token(), t1, t1+va)
	_ = la.Release(context.Background())
	s.c.SetClockOffset(0, 0)
	first, ok := h.firstSuccessAfter(t1)
	r := h.figures("14 clock step of +"+step.String()+" on a node of a bare quorum, "+guardName(guarded), 1+w.clients)
	r.Detect = first - t1
	r.Note = fmt.Sprintf("A's validity %v; node 0 stepped %v after A acquired; B acquired %v after A (found %v)",
		va.Round(time.Millisecond), (stepped - t1).Round(time.Millisecond), (first - t1).Round(time.Millisecond), ok)
	if !guarded {
		r.Backend, r.Wall = string(s.c.Backend()), time.Since(start)
		r.log(t)
		if ov := h.overlaps(); len(ov) == 0 {
			t.Errorf("negative control: with the guard off, node 0's step let no second holder in that the checker saw (B acquired: %v)", ok)
		} else {
			t.Logf("negative control detected as expected: %v", ov[0])
		}
		return
	}
	out, wasOut := votes.first(0, false, 0)
	if wasOut {
		r.Note += "; node 0 out of the vote: " + out.e.Why
	}
	s.finish(t, r, h, start)
	if !wasOut || !strings.Contains(out.e.Why, "WithClockGuard") {
		t.Errorf("node 0 was not kept out by the clock guard (event %+v, found %v)", out.e, wasOut)
	}
	if r.Failures["not voting"] == 0 {
		t.Errorf("no attempt of B met node 0 out of the vote (failures %v)", r.Failures)
	}
	if late := first - (t1 + va); !ok || late > availabilitySlack {
		t.Errorf("B acquired %v after A's validity ended (found %v), want within %v", late, ok, availabilitySlack)
	}
}

// 15. The restart guard's cost in availability. Contending clients on all
// five nodes; node 2 is restarted empty. The guard keeps it out of the
// vote for the TTL, and the other four still make a quorum: acquisitions
// go on through the restart and the quarantine, with no gap longer than
// half the TTL. The scenario logs when the node votes again, by the
// factory's NodeVote events and by Health, and the acquisitions made and
// failed meanwhile, against as long a stretch before the restart.
func (s *suite) restartGuardCost(t *testing.T) {
	start := time.Now()
	const ttl, node = guardTTL, 2
	s.waitNodesVote(t)
	var votes voteLog
	f := factory(t, s.c.Pools(), redlock.WithTTL(ttl), votes.option())
	h := newHistory()
	w := workload{clients: 8, names: []string{"s15"}, newLocker: libLockers(f),
		retryDelay: 5 * time.Millisecond, hold: holdUniform(time.Millisecond), witness: true}
	stop, _ := w.start(h)
	defer stop()
	time.Sleep(time.Second)
	killed := now()
	s.c.Restart(node)
	restarted := now()
	healthBack := s.waitNodesVote(t)
	deadline := time.Now().Add(voteBound(ttl))
	var in, back voteAt
	var wentOut, cameBack bool
	for time.Now().Before(deadline) {
		in, wentOut = votes.first(node, false, killed)
		if wentOut {
			if back, cameBack = votes.first(node, true, in.at); cameBack {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	end := now()
	if cameBack {
		end = back.at
	}
	time.Sleep(200 * time.Millisecond)
	stop()
	during := end - killed
	before := killed - during // as long a stretch before the fault
	nBefore, nDuring := h.successesIn(before, killed), h.successesIn(killed, end)
	failBefore, failDuring := h.failuresIn(before, killed), h.failuresIn(killed, end)
	gap := h.longestGap(killed, end)
	r := h.figures("15 restart guard's cost, node 2 restarted empty", w.clients)
	r.Detect = back.at - restarted
	r.Note = fmt.Sprintf("node 2 restarted in %v; out of the vote (NodeVote) %v after the kill, voting again %v after it answered again (Health: %v; window %v; %d vote events); "+
		"from the kill until it voted: %v, %d acquisitions (%.0f/s), %d failed {%s}, longest gap %v; the %v before: %d acquisitions (%.0f/s), %d failed {%s}",
		(restarted - killed).Round(time.Millisecond), (in.at - killed).Round(time.Millisecond), (back.at - restarted).Round(time.Millisecond),
		(healthBack - restarted).Round(time.Millisecond), ttl, votes.count(node),
		during.Round(time.Millisecond), nDuring, perSecond(nDuring, during), total(failDuring), causes(failDuring), gap.Round(time.Millisecond),
		during.Round(time.Millisecond), nBefore, perSecond(nBefore, during), total(failBefore), causes(failBefore))
	s.finish(t, r, h, start)
	switch {
	case !wentOut:
		t.Errorf("node 2 never left the vote after its empty restart")
	case !cameBack:
		t.Errorf("node 2 did not vote again within %v of its restart", voteBound(ttl))
	case back.at-killed < ttl:
		// The new process started after the kill: a guard that lets it
		// vote sooner counts it older than it is (INFO's
		// uptime_in_seconds, the difference of whole seconds of the wall
		// clock, runs up to a second ahead of the time the process has run).
		t.Errorf("node 2 voted again %v after its kill, before the window of %v was over", back.at-killed, ttl)
	}
	if nDuring == 0 || gap > ttl/2 {
		t.Errorf("with node 2 restarted and out of the vote, %d acquisitions on the other four, longest gap %v; want acquisitions throughout (gaps below %v)", nDuring, gap, ttl/2)
	}
}

func perSecond(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
