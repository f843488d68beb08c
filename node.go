package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pipeline"
)

// node is one Redis node of a quorum: its place in the list, its address
// for messages, the transport that carries its commands and the worker
// that finishes its deletes.
type node struct {
	index   int
	addr    string
	pool    Pool
	tr      transport
	cleaner *cleaner
	set     *nodeSet
	det     *lossDetector // loss detection; nil when off
	cluster *clusterNode  // a master of a Redis Cluster (ClusterNodes); nil for an independent node
	ack     []any         // the WAIT arguments of WithReplicaAck (ackWait); nil: none

	// scripts has the bit of every script known to have run on the node
	// (pool transport), so that only a script lost later counts as
	// missing.
	scripts atomic.Uint64
	fifo    bool      // the transport is one pipelined connection
	guard   nodeGuard // the node guard's state (guard.go)

	idMu sync.Mutex
	id   string // the server's run_id, once known
}

// address names the node in errors and events: a cluster node's master
// now, else the address it was made with.
func (n *node) address() string {
	if n.cluster != nil {
		return n.cluster.Addr()
	}
	return n.addr
}

// wrap turns err into a *NodeError for this node.
func (n *node) wrap(err error) error {
	if err == nil {
		return nil
	}
	return &NodeError{Node: n.index, Addr: n.address(), Err: err}
}

// judge reads call c's reply with its command's rule. A vote's reply
// carries the guard's evidence (guard.go): a yes counts only if the guard
// lets the node vote.
func (n *node) judge(c *call, v any, err error) reply {
	if err != nil {
		return reply{err: n.wrap(err)}
	}
	if c.cmd.vote == nil {
		return n.judged(c.cmd.judge(v))
	}
	inner, ev, err := splitEvidence(v)
	if err != nil {
		return reply{err: n.wrap(err)}
	}
	if n.fifo {
		ev.lastsave = -1 // the connection names the process
	}
	return n.judgeVote(c, inner, ev)
}

// judgeVote reads a vote's reply inner, with the evidence that came with it.
func (n *node) judgeVote(c *call, inner any, ev evidence) reply {
	rep := n.judged(c.cmd.judge(inner))
	if !rep.ok {
		return rep
	}
	ev.sent = c.sent
	if ev.got == 0 { // a TIME behind the vote notes when it came
		ev.got = time.Now().UnixMicro()
	}
	if why := n.guard.refuse(c.cmd.vote, ev); why != nil {
		return reply{err: n.wrap(why)}
	}
	return rep
}

// judged wraps a judged reply's error for this node.
func (n *node) judged(rep reply) reply {
	if rep.err != nil {
		rep.err = n.wrap(rep.err)
	}
	return rep
}

// splitEvidence takes a guarded script's reply apart: {the script's reply,
// the node's TIME in µs, LASTSAVE} (guardedSource).
func splitEvidence(v any) (any, evidence, error) {
	vals, ok := v.([]any)
	if !ok || len(vals) != 3 {
		return nil, evidence{}, fmt.Errorf("guarded vote replied %v, want three values", v)
	}
	clock, err1 := redis.Int64(vals[1], nil)
	lastsave, err2 := redis.Int64(vals[2], nil)
	if err := errors.Join(err1, err2); err != nil {
		return nil, evidence{}, fmt.Errorf("guarded vote's clock and LASTSAVE: %w", err)
	}
	return vals[0], evidence{clock: clock, lastsave: lastsave}, nil
}

// timeEvidence reads a reply to TIME.
func timeEvidence(v any) (evidence, error) {
	t, err := pipeline.ParseTime(v)
	if err != nil {
		return evidence{}, err
	}
	return evidence{clock: t, lastsave: -1}, nil
}

// do runs one command on the node and waits for its reply, at most wait.
func (n *node) do(ctx context.Context, cmd *command, wait time.Duration) reply {
	b := getRoundBuf(1, 1, false)
	defer b.unref() // the caller's reference; the call holds its own
	c := &b.calls[0]
	c.cmd, c.n, c.buf, c.fin, c.sent = cmd, n, b, newFinish(1), time.Now().UnixMicro()
	n.tr.start(ctx, c)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-b.wake:
		return b.slots[0]
	case <-t.C:
		return reply{err: n.wrap(context.DeadlineExceeded)}
	case <-ctx.Done():
		return reply{err: n.wrap(ctx.Err())}
	}
}

// setup prepares a new pipelined connection: it loads the scripts, turns
// client-side-caching tracking on for loss detection when its subscriber
// is up (lossdetection.go), and reads the facts of the server that answers
// (its identity, uptime and persistence, for the distinct-servers check
// and the node guard), in one round trip, so that a distant node gets a
// connection as soon as a near one. Every reply on the connection comes
// from that server process: a restart breaks the connection.
func (n *node) setup(ctx context.Context, c redis.Conn) error {
	for _, src := range scriptSources() {
		if err := c.Send("SCRIPT", "LOAD", src); err != nil {
			return err
		}
	}
	var redirect int64
	if n.det != nil {
		redirect = n.det.redirect(n.index)
	}
	if redirect != 0 {
		if err := c.Send("CLIENT", "TRACKING", "on", "REDIRECT", redirect, "NOLOOP"); err != nil {
			return err
		}
		if err := c.Send("CLIENT", "LIST", "ID", redirect); err != nil {
			return err
		}
	}
	for _, cmd := range factsCommands {
		if err := c.Send(cmd[0].(string), cmd[1:]...); err != nil {
			return err
		}
	}
	replies, err := redis.Values(redis.DoContext(c, ctx, "")) // flushes and reads every reply
	if err != nil {
		return err
	}
	got := monotonic()
	for _, r := range replies[:len(allScripts)] {
		if e, ok := r.(redis.Error); ok {
			return e
		}
	}
	facts := parseFacts(replies[len(replies)-2], replies[len(replies)-1])
	n.guard.learnt(facts, got, true)
	// A duplicate fails every operation (nodeSet.check), not the
	// connection, which Health still reads the facts over.
	n.identified(identityOf(facts, n.index))
	if n.det != nil {
		var trackErr error
		if redirect != 0 {
			trackErr = n.det.checkRedirect(ctx, c, replies[len(allScripts)], replies[len(allScripts)+1])
		}
		n.det.setUp(n.index, redirect, trackErr)
	}
	return nil
}

// identityOf is the server's run_id from its facts. A server that refuses
// INFO (an embedded test server, a proxy that hides it) cannot be told
// apart from the others: it gets an identity of its own, so that it is not
// asked again, and the check relies on the URLs there.
func identityOf(f nodeFacts, index int) string {
	if f.infoErr != nil {
		return fmt.Sprintf("unidentifiable node %d", index)
	}
	return f.runID
}

// identified records the server behind the node and checks the set for
// duplicates (nodeSet.distinct, which keeps the verdict).
func (n *node) identified(id string) {
	if id == "" {
		return
	}
	n.idMu.Lock()
	n.id = id
	n.idMu.Unlock()
	n.set.distinct()
}

// identity returns the node's run_id, or "" while unknown.
func (n *node) identity() string {
	n.idMu.Lock()
	defer n.idMu.Unlock()
	return n.id
}
