package redlock

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
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

	// scripts has the bit of every script known to have run on the node
	// (pool transport), so that only a script lost later counts as
	// missing.
	scripts atomic.Uint64

	idMu sync.Mutex
	id   string // the server's run_id, once known
}

// wrap turns err into a *NodeError for this node.
func (n *node) wrap(err error) error {
	if err == nil {
		return nil
	}
	return &NodeError{Node: n.index, Addr: n.addr, Err: err}
}

// judge reads a reply with the command's rule.
func (n *node) judge(cmd *command, v any, err error) reply {
	if err != nil {
		return reply{err: n.wrap(err)}
	}
	rep := cmd.judge(v)
	if rep.err != nil {
		rep.err = n.wrap(rep.err)
	}
	return rep
}

// do runs one command on the node and waits for its reply, at most wait.
func (n *node) do(ctx context.Context, cmd *command, wait time.Duration) reply {
	var rep reply
	out := make(chan uint8, 1)
	c := &call{cmd: cmd, n: n, slot: &rep, out: out, fin: newFinish(1)}
	n.tr.start(ctx, c)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-out:
		return rep
	case <-t.C:
		return reply{err: n.wrap(context.DeadlineExceeded)}
	case <-ctx.Done():
		return reply{err: n.wrap(ctx.Err())}
	}
}

// setup prepares a new pipelined connection: it loads the scripts, turns
// client-side-caching tracking on for loss detection when its subscriber
// is up (tracking.go), and learns which server answers, in one round trip,
// so that a distant node gets a connection as soon as a near one.
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
	if err := c.Send("INFO", "server"); err != nil {
		return err
	}
	replies, err := redis.Values(redis.DoContext(c, ctx, "")) // flushes and reads every reply
	if err != nil {
		return err
	}
	for _, r := range replies[:len(allScripts)] {
		if e, ok := r.(redis.Error); ok {
			return e
		}
	}
	if err := n.identified(identityOf(replies[len(replies)-1], n.index)); err != nil {
		return err
	}
	if n.det != nil {
		var trackErr error
		if redirect != 0 {
			trackErr = n.det.checkRedirect(ctx, c, replies[len(allScripts)], replies[len(allScripts)+1])
		}
		n.det.setUp(n.index, redirect, trackErr)
	}
	return nil
}

// identityOf reads the run_id from a reply to INFO server. A server that
// refuses the command (an embedded test server, a proxy that hides INFO)
// cannot be told apart from the others: it gets an identity of its own, so
// that it is not asked again, and the check relies on the URLs there.
func identityOf(v any, index int) string {
	if _, ok := v.(redis.Error); ok {
		return fmt.Sprintf("unidentifiable node %d", index)
	}
	info, _ := redis.String(v, nil)
	return runID(info)
}

// runID reads the run_id field of an INFO server reply.
func runID(info string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v
		}
	}
	return ""
}

// identified records the server behind the node and fails when another
// node of the set is the same server.
func (n *node) identified(id string) error {
	if id == "" {
		return nil
	}
	n.idMu.Lock()
	n.id = id
	n.idMu.Unlock()
	return n.set.distinct()
}

// identity returns the node's run_id, or "" while unknown.
func (n *node) identity() string {
	n.idMu.Lock()
	defer n.idMu.Unlock()
	return n.id
}
