package redlock

import (
	"context"
	"errors"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// node is one Redis node of a lock's quorum.
type node struct {
	index int
	addr  string
	pool  Pool
	pipe  *pipeline // nil: every command borrows a pool connection
}

// newNodes checks a node list for nil and duplicate entries and wraps it.
// The node count is checked by the callers, which differ in what they need.
func newNodes(pools []Pool) ([]*node, error) {
	if len(pools) > maxNodes {
		return nil, invalidArg("%d nodes: at most %d are supported", len(pools), maxNodes)
	}
	ns := make([]*node, len(pools))
	for i, p := range pools {
		if isNilPool(p) {
			return nil, invalidArg("node %d is nil", i)
		}
		for j := 0; j < i; j++ {
			if samePool(pools[j], p) {
				return nil, invalidArg("node %d is the same pool as node %d", i, j)
			}
		}
		ns[i] = &node{index: i, addr: nodeAddr(p), pool: p}
	}
	return ns, nil
}

// wrap turns err into a *NodeError for this node.
func (n *node) wrap(err error) error {
	if err == nil {
		return nil
	}
	return &NodeError{Node: n.index, Addr: n.addr, Err: err}
}

// run executes cmd on a pool connection, bounded by ctx.
func (n *node) run(ctx context.Context, cmd nodeCmd) reply {
	c, err := n.pool.GetContext(ctx)
	if err != nil {
		return reply{err: n.wrap(err)}
	}
	defer c.Close()
	var v any
	if cmd.script != nil {
		v, err = cmd.script.DoContext(ctx, c, cmd.args...)
	} else {
		v, err = redis.DoContext(c, ctx, cmd.name, cmd.args...)
	}
	return n.judge(cmd, v, err)
}

// start queues cmd on the node's pipeline; the reply goes to the node's
// slot and its index to out.
func (n *node) start(ctx context.Context, cmd nodeCmd, slots []reply, out chan<- uint8) {
	c := pcalls.Get().(*pcall)
	c.name, c.args = cmd.name, cmd.args
	if cmd.script != nil {
		c.name, c.args = "EVALSHA", cmd.wire
	}
	c.ctx, c.node, c.cmd, c.slots, c.out = ctx, n, cmd, slots, out
	n.pipe.send(ctx, c)
}

// complete reads a pipelined reply. A node that lost its scripts (SCRIPT
// FLUSH, restart) gets the source with EVAL, sent from a goroutine of its
// own because the pipeline's reader must never block.
func (n *node) complete(c *pcall, v any, err error) {
	if c.cmd.script != nil && c.name == "EVALSHA" && isNoScript(err) {
		retry := pcalls.Get().(*pcall)
		*retry = *c
		retry.name, retry.args = "EVAL", scriptArgs(sourceOf(c.cmd.script), c.cmd.args)
		go n.pipe.send(retry.ctx, retry)
		return
	}
	rep := n.judge(c.cmd, v, err)
	if rep.err != nil && c.cmd.release != nil {
		c.cmd.release.retryOn(n)
	}
	c.slots[n.index] = rep
	c.out <- uint8(n.index)
}

// judge reads a reply with the command's rule.
func (n *node) judge(cmd nodeCmd, v any, err error) reply {
	if err != nil {
		return reply{err: n.wrap(err)}
	}
	rep := cmd.judge(v)
	if rep.err != nil {
		rep.err = n.wrap(rep.err)
	}
	return rep
}

// scriptArgs builds EVALSHA/EVAL arguments: the hash or source, then the
// key count, keys and arguments.
func scriptArgs(shaOrSrc string, countKeysArgs []any) []any {
	return append([]any{shaOrSrc}, countKeysArgs...)
}

func isNoScript(err error) bool {
	re, ok := err.(redis.Error)
	return ok && strings.HasPrefix(string(re), "NOSCRIPT")
}

// loadScripts loads every lock script on the node.
func (n *node) loadScripts(ctx context.Context) error {
	c, err := n.pool.GetContext(ctx)
	if err != nil {
		return n.wrap(err)
	}
	defer c.Close()
	for _, src := range scriptSources() {
		if _, err := redis.DoContext(c, ctx, "SCRIPT", "LOAD", src); err != nil {
			return n.wrap(err)
		}
	}
	return nil
}

// joinNodeErrors joins per-node failures; nil when there are none.
func joinNodeErrors(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}
