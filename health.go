package redlock

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// NodeHealth is one node's report from Factory.Health: what the node says
// of itself, and whether the node guard lets it vote.
type NodeHealth struct {
	Addr string
	// Voting reports whether the node's yes counts toward a quorum now, for
	// a lock of the factory's default options: it answers, it is not the
	// same server as another node, and the node guard lets it vote.
	Voting bool
	// Why says why the node does not vote; "" when it votes.
	Why string
	// Risk names a setting that can break a lock's safety even while the
	// node votes, such as a maxmemory-policy that may evict lock keys; ""
	// when there is none.
	Risk string

	Version string
	RunID   string
	Uptime  time.Duration // whole seconds, as the node reports it (uptime_in_seconds)
	// Durable: the node keeps every acknowledged write across a restart
	// (appendonly yes, appendfsync always), so the restart guard lets it
	// vote at once. Persistence says what it runs with.
	Durable     bool
	Persistence string
	MaxMemory   int64  // bytes; 0: no limit
	Eviction    string // maxmemory-policy
	// ClockOffset is the node's wall clock minus this client's, measured
	// with TIME at the middle of its round trip RTT.
	ClockOffset time.Duration
	RTT         time.Duration
	// Err is why the node could not be read (unreachable, timed out);
	// nil when it answered.
	Err error
	// KeyTag and Slot say where a node of ClusterNodes keeps its keys: the
	// hash tag in front of every name ("{7}") and its slot, which the
	// master at Addr owns. "" and -1 for an independent node.
	KeyTag string
	Slot   int

	ran   time.Duration // how long the node had run at least (nodeFacts.ranAtLeast)
	moved time.Duration // how long ago this client saw a cluster node's master or tag change; 0: never
}

// Health reads every node's facts (INFO, CONFIG GET append* and TIME,
// each within the node timeout) and reports, in node order, whether it
// votes and why not. It returns an error only when ctx ends or the factory
// is closed; a node that cannot be read is reported in its NodeHealth.
// It is what `redlock doctor` prints.
func (f *Factory) Health(ctx context.Context) ([]NodeHealth, error) {
	select {
	case <-f.o.dying:
		return nil, ErrClosed
	default:
	}
	cfg := f.defaults
	if err := cfg.validate(len(f.nodes)); err != nil {
		return nil, err
	}
	out := make([]NodeHealth, len(f.nodes))
	var wg sync.WaitGroup
	for i, n := range f.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = n.health(ctx, cfg.nodeTimeout)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	markDuplicates(out)
	for i := range out {
		judgeHealth(&out[i], &cfg)
	}
	return out, nil
}

// health reads node n's facts and clock.
func (n *node) health(ctx context.Context, timeout time.Duration) NodeHealth {
	h := NodeHealth{Addr: n.address(), Slot: -1}
	if cn := n.cluster; cn != nil {
		p := cn.place.Load()
		h.Addr, h.KeyTag, h.Slot = cn.Addr(), p.prefix, p.slot
		if at := cn.moved.Load(); at != 0 {
			h.moved = max(monotonic()-time.Duration(at), 1)
		}
	}
	sent := time.Now()
	clock := n.do(ctx, plainCmd(judgeAnyReply, "TIME"), timeout)
	got := time.Now()
	if clock.err != nil {
		h.Err = clock.err
		return h
	}
	ev, err := timeEvidence(clock.raw)
	if err != nil {
		h.Err = n.wrap(err)
		return h
	}
	h.RTT = got.Sub(sent)
	mid := sent.Add(h.RTT / 2).UnixMicro()
	h.ClockOffset = time.Duration(ev.clock-mid) * time.Microsecond
	facts, err := n.readFacts(timeout)
	if err != nil {
		h.Err = err
		return h
	}
	h.Version, h.RunID, h.Uptime, h.ran = facts.version, facts.runID, facts.uptime, facts.ranAtLeast()
	h.Durable, h.Persistence = facts.durable(), facts.persistence()
	h.MaxMemory, h.Eviction, h.Risk = facts.maxmemory, facts.policy, facts.risk()
	if facts.infoErr != nil {
		h.Persistence = "unknown: INFO refused"
	}
	return h
}

// markDuplicates names the nodes that are the same server as an earlier
// one.
func markDuplicates(hs []NodeHealth) {
	seen := map[string]int{}
	for i := range hs {
		id := hs[i].RunID
		if id == "" {
			continue
		}
		if j, dup := seen[id]; dup {
			hs[i].Why = fmt.Sprintf("the same Redis server as node %d (%s), run_id %s: a quorum needs independent servers", j, hs[j].Addr, id)
			continue
		}
		seen[id] = i
	}
}

// judgeHealth sets h.Voting and h.Why by the guard's rules for a lock of
// cfg.
func judgeHealth(h *NodeHealth, cfg *config) {
	window, allowance := cfg.restartWindow(), cfg.clockAllowance()
	switch {
	case h.Why != "": // a duplicate
	case h.Err != nil:
		h.Why = "unreachable: " + detailOf(h.Err)
	case allowance > 0 && (h.ClockOffset-h.RTT/2 > allowance || h.ClockOffset+h.RTT/2 < -allowance):
		h.Why = fmt.Sprintf("its clock is %v off this client's, beyond the clock guard's %v (WithClockGuard)", h.ClockOffset.Round(time.Millisecond/10), allowance)
	case window > 0 && h.moved > 0 && h.moved < window:
		h.Why = fmt.Sprintf("its cluster master or slot changed %v ago, and the restart guard keeps it out until %v have passed (WithRestartGuard)", h.moved.Round(time.Millisecond), window)
	case window > 0 && h.RunID == "":
		h.Why = "its uptime is unknown (INFO refused); the restart guard keeps such a node out (WithRestartGuard(0) turns it off)"
	case window > 0 && !h.Durable && h.ran < window:
		h.Why = fmt.Sprintf("it started %v ago without durable storage (%s), and the restart guard keeps it out until it has run %v (WithRestartGuard)",
			h.Uptime, h.Persistence, window)
	}
	h.Voting = h.Why == ""
}
