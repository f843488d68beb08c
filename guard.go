package redlock

import (
	"fmt"
	"sync/atomic"
	"time"
)

// The node guard (docs/SAFETY.md, "The node guard") keeps a node out of
// the vote while it may have lost a holder's key: its yes to a command that
// makes or keeps a holding (an attempt, an extension, a fence commit, a
// check) is not counted. Its other replies count as before, and a release
// deletes there as anywhere. Two rules, each judged on every vote:
//
//   - restart: the node's process has run for less than the window and
//     cannot show that it kept its data (AOF with appendfsync always);
//   - clock: the node's clock, read in the vote's own execution, is off
//     this client's by more than the allowance.
//
// Both read what the vote's reply carries (evidence): a pipelined
// connection sends TIME right behind the vote, and on other transports a
// vote runs as its script's guarded form (scripts.go), which returns the
// node's TIME and LASTSAVE with the script's own reply. The process a vote came
// from is known by its connection on a pipelined transport (each new one
// reads INFO before its first command, node.setup), and by LASTSAVE on the
// others (see young).

// voteRule is what one lock's votes are judged by; nil when the guard is
// off.
type voteRule struct {
	window    time.Duration // restart guard; 0: off
	allowance time.Duration // clock guard; 0: off
	fifo      bool          // pipelined: a vote is paired with TIME
}

// newVoteRule resolves the guard's options for a lock of cfg.
func newVoteRule(cfg *config, fifo bool) *voteRule {
	r := &voteRule{window: cfg.restartWindow(), allowance: cfg.clockAllowance(), fifo: fifo}
	if r.window == 0 && r.allowance == 0 {
		return nil
	}
	return r
}

// tighten makes r strict enough for the locks of o too: a batch's votes
// are judged by its longest window and its smallest allowance.
func (r *voteRule) tighten(o *voteRule) {
	if o == nil {
		return
	}
	r.fifo = o.fifo
	r.window = max(r.window, o.window)
	if r.allowance == 0 || o.allowance < r.allowance {
		r.allowance = o.allowance
	}
}

// asVote marks cmd, a command whose yes makes or keeps a holding, as a vote
// under rule. Pipelined, it runs as it is, paired with a TIME behind it on
// the same connection (call.Trailers), which one batch of votes shares;
// otherwise a script runs in its guarded form, and a plain SET NX PX as
// acquire.lua's guarded form. It returns cmd as it is when rule is nil.
func (cmd *command) asVote(rule *voteRule) *command {
	if rule == nil {
		return cmd
	}
	cmd.vote = rule
	switch {
	case rule.fifo:
	case cmd.script != nil:
		cmd.script = cmd.script.guarded
		cmd.args[0] = cmd.script.hashArg
	default: // SET key token NX PX ttl
		args := cmd.args
		cmd.script, cmd.name = acquireScript.guarded, ""
		cmd.args, cmd.nkeys = []any{cmd.script.hashArg, 1, args[0], args[1], args[4]}, 1
	}
	return cmd
}

// evidence is what a vote's reply carried besides the vote, with this
// client's wall clock around it, all in microseconds since the epoch.
type evidence struct {
	clock    int64 // the node's TIME
	lastsave int64 // its LASTSAVE, in seconds; -1: the connection vouches for the process; -2: unknown
	sent     int64 // when the round was sent
	got      int64 // when the reply came
}

// notVoting is ErrNotVoting with the reason.
type notVoting struct{ why string }

func (e *notVoting) Error() string        { return "not voting: " + e.why }
func (e *notVoting) Is(target error) bool { return target == ErrNotVoting || target == ErrRedlock }

// nodeGuard is one node's side of the guard: what is known of the process
// answering, and whether the node last voted.
type nodeGuard struct {
	n     *node
	trust atomic.Pointer[trust] // nil until the node's process is known
	// out is set while the node's last vote was refused, so that leaving
	// and rejoining the vote are reported once each.
	out       atomic.Bool
	offset    atomic.Int64 // the node's clock minus ours at the last vote, µs
	rtt       atomic.Int64 // that vote's round trip, µs
	verifying atomic.Bool
	warned    atomic.Bool // a risky setting was reported
}

// trust is what is known of the node's current process.
type trust struct {
	facts nodeFacts
	// since is when, on monotonic(), the process had started at the
	// latest: how long it had run at least (nodeFacts.ranAtLeast), taken
	// from when its INFO reply came.
	since time.Duration
	// conn: a pipelined connection read these facts before its first
	// command, so every reply on it comes from this process. Otherwise the
	// facts hold for the process whose LASTSAVE is facts.lastsave, once
	// settled (see young).
	conn    bool
	settled bool
	// ranFor is the longest this process was seen to have run, so that a
	// node past every window reads no clock at each vote.
	ranFor atomic.Int64
}

// refuse returns why the node must not vote under rule, judged on ev, or
// nil; it reports the node leaving and rejoining the vote.
func (g *nodeGuard) refuse(rule *voteRule, ev evidence) error {
	var why error
	if rule.allowance > 0 {
		why = g.clockOff(rule.allowance, ev)
	}
	if why == nil && rule.window > 0 {
		why = g.young(rule.window, ev)
	}
	switch {
	case why != nil:
		if g.out.CompareAndSwap(false, true) {
			g.n.set.events.vote(g.n, false, why)
		}
	case g.out.Load() && g.out.CompareAndSwap(true, false):
		g.n.set.events.vote(g.n, true, nil)
	}
	return why
}

// clockOff judges the node's clock: it votes while its reading could be
// within allowance of ours, that is for some moment between sending the
// round and receiving the reply. A step larger than the allowance plus the
// round trip is seen (docs/SAFETY.md says why that suffices).
func (g *nodeGuard) clockOff(allowance time.Duration, ev evidence) error {
	ahead, behind := ev.clock-ev.sent, ev.clock-ev.got // the offset at most and at least
	g.offset.Store((ahead + behind) / 2)
	g.rtt.Store(ev.got - ev.sent)
	a := allowance.Microseconds()
	switch {
	case behind > a:
		return &notVoting{fmt.Sprintf("its clock is %v ahead of this client's, beyond the clock guard's %v (WithClockGuard)", usec(behind), allowance)}
	case ahead < -a:
		return &notVoting{fmt.Sprintf("its clock is %v behind this client's, beyond the clock guard's %v (WithClockGuard)", usec(-ahead), allowance)}
	}
	return nil
}

// young judges the node's process: it votes once the process has run for
// window, or at once when it keeps its data. A LASTSAVE older than window
// by the node's clock shows the process is (the process started before
// its first save); otherwise the INFO read last says, for the process it
// was read from: on a pipelined connection that is the connection's, and
// elsewhere the process whose LASTSAVE matches. A restart gives the new
// process a LASTSAVE of its start, which differs from the one read unless
// it is the same second: so the facts of a node that is not durable
// settle only once INFO was read in a later second than their LASTSAVE,
// and a save re-reads them. (A durable node's facts count at once: a
// restart in the second they were read would have to come with a change
// of its persistence settings to matter.)
func (g *nodeGuard) young(window time.Duration, ev evidence) error {
	if why := g.moved(window); why != nil {
		return why
	}
	if ev.lastsave >= 0 && ev.clock-(ev.lastsave+1)*1e6 >= window.Microseconds() {
		return nil
	}
	t := g.trust.Load()
	byRound := t != nil && !t.conn
	stale := byRound && ev.lastsave >= 0 && ev.lastsave != t.facts.lastsave // -2: the node cannot say
	unsettled := byRound && !t.settled
	if t == nil || stale || unsettled {
		g.verify()
	}
	switch {
	case t == nil:
		return &notVoting{"its uptime is not known yet (the restart guard reads INFO first)"}
	case stale:
		return &notVoting{"the restart guard is reading its INFO again: it saved or restarted since the last read (LASTSAVE changed)"}
	case t.facts.durable():
		return nil
	case unsettled:
		return &notVoting{"the restart guard is reading its INFO again: it was read in the second of its last save or start"}
	case t.facts.infoErr != nil:
		return &notVoting{fmt.Sprintf("its uptime is unknown (INFO: %v); the restart guard keeps such a node out (WithRestartGuard(0) turns it off)", t.facts.infoErr)}
	}
	if window <= time.Duration(t.ranFor.Load()) {
		return nil
	}
	up := monotonic() - t.since
	if up < window {
		return &notVoting{fmt.Sprintf("it started %v ago without durable storage (%s), and the restart guard keeps it out until it has run %v (WithRestartGuard)",
			up.Round(time.Millisecond), t.facts.persistence(), window)}
	}
	t.ranFor.Store(int64(up)) // a race may keep a shorter one: a clock reading more, later
	return nil
}

// moved keeps a cluster node out of the vote for window after this client
// saw its master or hash tag change: the master that took over (a promoted
// replica, or the master the node moved to after a reshard) may lack the
// keys the node held, as a node that restarted without persistence does.
// A process's uptime cannot show that, and neither can its persistence.
func (g *nodeGuard) moved(window time.Duration) error {
	cn := g.n.cluster
	if cn == nil {
		return nil
	}
	at := cn.moved.Load()
	if at == 0 {
		return nil
	}
	if since := monotonic() - time.Duration(at); since < window {
		return &notVoting{fmt.Sprintf("its cluster master or slot changed %v ago (now %s, slot %d), and the restart guard keeps it out until %v have passed (WithRestartGuard)",
			since.Round(time.Millisecond), cn.Addr(), cn.place.Load().slot, window)}
	}
	return nil
}

// maxSettleReads bounds the readings of one verify: a node that saves
// every second never settles, and its next vote asks again.
const maxSettleReads = 3

// verify reads the node's facts again in the background, once at a time,
// for a transport whose votes name their process by LASTSAVE. Facts read
// in the second of the node's last save or start do not settle (see
// young), so it reads them again in the node's next second: a vote that
// comes while a reading is under way starts none, and the node would
// otherwise stay out until some later vote asked, which it would refuse.
func (g *nodeGuard) verify() {
	if g.n.fifo || !g.verifying.CompareAndSwap(false, true) {
		return
	}
	o := g.n.set.o
	if !o.spawn(func() {
		defer g.verifying.Store(false)
		for range maxSettleReads {
			f, err := g.n.readFacts(g.n.set.nodeTimeout)
			if err != nil || f.infoErr != nil || f.clock/1e6 > f.lastsave {
				return
			}
			next := time.Duration(1e6-f.clock%1e6)*time.Microsecond + 10*time.Millisecond
			t := time.NewTimer(next)
			select {
			case <-t.C:
			case <-o.dying:
				t.Stop()
				return
			}
		}
	}) {
		g.verifying.Store(false)
	}
}

// learnt records facts read at got (on monotonic()) from the node's
// process: on a new pipelined connection (conn) or by a round of their own.
// A pipelined node trusts only its connection's facts: a round's may come
// from a process that another connection talks to.
func (g *nodeGuard) learnt(f nodeFacts, got time.Duration, conn bool) {
	if conn || !g.n.fifo {
		t := &trust{facts: f, since: got - f.ranAtLeast(), conn: conn}
		t.settled = f.clock/1e6 > f.lastsave
		g.trust.Store(t)
	}
	if f.risk() != "" && g.warned.CompareAndSwap(false, true) {
		g.n.set.events.risk(g.n, f.risk())
	}
}

// usec is a count of microseconds as a duration, for messages.
func usec(us int64) time.Duration {
	return (time.Duration(us) * time.Microsecond).Round(time.Millisecond / 10)
}
