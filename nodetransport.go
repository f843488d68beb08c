package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// maxInFlight bounds the commands, a goroutine each, in flight on a node
// that has not answered for a quarter of the node timeout: a hung node
// holds each for the node timeout, which would grow the goroutines with
// the load while it is down. Beyond it the node fails fast (ErrNodeBusy),
// as a bulkhead does; a node that answers is never refused.
const maxInFlight = 64

// nodeTransport carries commands to a Node: a redigo pool
// (WithPipelining(false), and locks made by NewLock) or a Node of another
// client. Each command runs in a goroutine of the owner, bounded by the
// node timeout, borrowing a connection of the pool or the client (which
// may pipeline them, as rueidis does); their order is not known, so the
// transport is not FIFO.
type nodeTransport struct {
	node        Node
	o           *owner
	nodeTimeout time.Duration
	inFlight    atomic.Int32
	answered    atomic.Int64 // when the node last answered, on monotonic()
}

// newNodeTransport returns the transport of a Node: a batching one when
// the node can batch.
func newNodeTransport(nd Node, o *owner, nodeTimeout time.Duration) transport {
	if b, ok := nd.(Batcher); ok {
		return &batchTransport{node: b, o: o, nodeTimeout: nodeTimeout}
	}
	t := &nodeTransport{node: nd, o: o, nodeTimeout: nodeTimeout}
	t.answered.Store(int64(monotonic()))
	return t
}

// stuck reports whether the node has not answered for a quarter of the
// node timeout.
func (t *nodeTransport) stuck() bool {
	return monotonic()-time.Duration(t.answered.Load()) > t.nodeTimeout/4
}

func (t *nodeTransport) start(ctx context.Context, c *call) {
	if t.inFlight.Add(1) > maxInFlight && t.stuck() {
		t.inFlight.Add(-1)
		c.deliver(reply{err: c.n.wrap(fmt.Errorf("%w: %d commands in flight", ErrNodeBusy, maxInFlight))})
		return
	}
	// The command runs to its end or its node timeout whatever ctx does:
	// the round stops waiting on its own, and a client's read cut short
	// (redigo's DoContext) would go on where Close cannot wait for it.
	ctx = context.WithoutCancel(ctx)
	if !t.o.spawn(func() { t.run(ctx, c) }) {
		t.inFlight.Add(-1)
		c.deliver(reply{err: c.n.wrap(ErrClosed)})
	}
}

func (t *nodeTransport) run(ctx context.Context, c *call) {
	defer t.inFlight.Add(-1)
	ctx, cancel := context.WithTimeout(ctx, t.nodeTimeout)
	defer cancel()
	var rep reply
	if p, ok := t.node.(poolNode); ok {
		rep = p.run(ctx, c)
	} else {
		v, err := t.runNode(ctx, c.cmd)
		rep = c.n.judge(c, v, err)
	}
	var refusal redis.Error // an error reply is an answer too
	if rep.err == nil || errors.As(rep.err, &refusal) {
		t.answered.Store(int64(monotonic()))
	}
	c.deliver(rep)
}

// runNode runs cmd on a Node of another client.
func (t *nodeTransport) runNode(ctx context.Context, cmd *command) (any, error) {
	if s := cmd.script; s != nil {
		keys, args := cmd.scriptKeys(nil)
		return fromNode(t.node.RunScript(ctx, s.pub, keys, args...))
	}
	return fromNode(t.node.Do(ctx, cmd.name, cmd.args...))
}

// close does nothing: the pools and clients are the caller's.
func (t *nodeTransport) close() {}

// run runs cmd on a pooled connection, in redigo's reply forms, and tells
// the observer when the node had lost a script it ran before.
func (p poolNode) run(ctx context.Context, c *call) reply {
	n, cmd := c.n, c.cmd
	var wait []any
	if cmd.writes() {
		wait = n.ack
	}
	v, missed, err := p.do(ctx, cmd, wait)
	rep := n.judge(c, v, err)
	if s := cmd.script; s != nil {
		// A node's first use of a script is expected to miss it (pools
		// load nothing up front); later, it lost them.
		rep.reloaded = missed && n.scripts.Load()&s.bit != 0
		if err == nil {
			n.scripts.Or(s.bit)
		}
	}
	return rep
}

// do runs cmd on a pooled connection: a script with EVALSHA, then with
// EVAL when the node answers NOSCRIPT (missed); then WAIT with the
// arguments wait on the same connection, unless wait is nil
// (WithReplicaAck), whose shortfall fails the command.
func (p poolNode) do(ctx context.Context, cmd *command, wait []any) (v any, missed bool, err error) {
	conn, err := p.p.GetContext(ctx)
	if err != nil {
		return nil, false, err
	}
	defer conn.Close()
	v, missed, err = runOn(ctx, conn, cmd)
	if err != nil || wait == nil {
		return v, missed, err
	}
	acks, err := doTimeout(ctx, conn, "WAIT", wait...)
	if err == nil {
		err = checkAck(acks, wait)
	}
	return v, missed, err
}

// runOn runs cmd on conn: a script with EVALSHA, then with EVAL when the
// node answers NOSCRIPT (missed).
func runOn(ctx context.Context, conn redis.Conn, cmd *command) (v any, missed bool, err error) {
	s := cmd.script
	if s == nil {
		v, err = doTimeout(ctx, conn, cmd.name, cmd.args...)
		return v, false, err
	}
	v, err = doTimeout(ctx, conn, "EVALSHA", cmd.args...)
	if !isNoScript(err) {
		return v, false, err
	}
	v, err = doTimeout(ctx, conn, "EVAL", append([]any{s.src}, cmd.args[1:]...)...)
	return v, true, err
}

// doTimeout runs a command within ctx's deadline in this goroutine: with
// the connection's read timeout when it has one, so that no reader of
// redigo's outlives the call, and with DoContext otherwise (no deadline,
// or a wrapper of the caller's).
func doTimeout(ctx context.Context, c redis.Conn, name string, args ...any) (any, error) {
	dl, ok := ctx.Deadline()
	ct, timed := c.(redis.ConnWithTimeout)
	if !ok || !timed {
		return redis.DoContext(c, ctx, name, args...)
	}
	d := time.Until(dl)
	if d <= 0 {
		return nil, context.DeadlineExceeded
	}
	return ct.DoWithTimeout(d, name, args...)
}

// fromNode turns a Node's reply into the forms the reply readers take,
// which are redigo's: bulk strings as []byte and error replies as
// redis.Error.
func fromNode(v any, err error) (any, error) {
	if err != nil {
		var re ReplyError
		if errors.As(err, &re) {
			return nil, redis.Error(re)
		}
		return nil, err
	}
	return redigoValue(v), nil
}

// redigoValue converts strings, nested ones included, to []byte.
func redigoValue(v any) any {
	switch v := v.(type) {
	case string:
		return []byte(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = redigoValue(e)
		}
		return out
	case ReplyError:
		return redis.Error(v)
	}
	return v
}
