package redlock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pipeline"
)

// transport carries commands to one node. Two implementations exist: one
// auto-pipelined connection per node (a Factory's default), and a pool
// connection per command (WithPipelining(false), and locks made by
// NewLock). Lock code never knows which one it talks to.
type transport interface {
	// start sends c's command and returns at once; c.deliver is called
	// exactly once with the node's reply or failure, never blocking.
	start(ctx context.Context, c *call)
	// fifo reports whether commands started one after another reach the
	// node in that order (one connection). On such a transport a delete
	// started after a SET runs after it; otherwise the delete has to wait
	// until the SET's call is done.
	fifo() bool
	// close stops the transport once what was started has been written;
	// later calls fail with ErrClosed.
	close()
}

// command is what a round sends to every node, with the reading of its
// reply.
type command struct {
	script *script // a lock script (EVALSHA, then EVAL on NOSCRIPT), or
	name   string  // a plain command
	args   []any   // for a script: its hash (hashArg), key count, keys and arguments
	judge  func(v any) reply
	// detached commands outlive the caller's context, which bounds only
	// its wait: a SET must finish so that its fate is known, and a delete
	// must reach slow nodes too.
	detached bool
	// redo marks a release script whose delete must happen: when it fails
	// on a node, that node's cleanup worker takes it over (the key and
	// token are args[2] and args[3]); the key lives redo at most.
	redo time.Duration
}

// redone is the delete of a failed release command, for a cleaner.
func (cmd *command) redone() discard {
	key, _ := cmd.args[2].(string)
	token, _ := cmd.args[3].(string)
	return discard{key: key, token: token, until: time.Now().Add(cmd.redo)}
}

// call is one command on one node, with where its reply goes.
type call struct {
	cmd  *command
	n    *node
	name string // the command as written: EVALSHA, then EVAL on NOSCRIPT
	args []any
	slot *reply
	idx  uint8
	out  chan<- uint8 // buffered for every call of the round: never blocks
	fin  *finish      // pool rounds: counts the calls still running
	buf  *roundBuf    // the round's buffer, held until delivered
	obs  *observer    // told of the node's failure; nil: nobody listens
}

// calls recycles the calls of pipelined rounds, one per node and command.
var calls = sync.Pool{New: func() any { return new(call) }}

// recycle returns a delivered call to calls: nothing may use it after
// deliver returned.
func (c *call) recycle() {
	*c = call{}
	calls.Put(c)
}

// finish is closed once every call of a pool round is done, so that a
// cleanup can follow a SET whose reply came too late to be counted, and
// records which of those calls failed.
type finish struct {
	left   atomic.Int32
	failed atomic.Uint64 // the nodes whose call ended in an error
	done   chan struct{}
}

func newFinish(n int) *finish {
	f := &finish{done: make(chan struct{})}
	f.left.Store(int32(n))
	return f
}

func (f *finish) one() {
	if f.left.Add(-1) == 0 {
		close(f.done)
	}
}

// failedOn reports whether node i's call failed: without a reply, its
// command may still land. It is final once done is closed.
func (f *finish) failedOn(i int) bool { return f.failed.Load()&(1<<i) != 0 }

// Command implements pipeline.Call.
func (c *call) Command() (string, []any) { return c.name, c.args }

// Reply implements pipeline.Call. A node that lost its scripts (SCRIPT
// FLUSH, restart) gets the source with EVAL, queued for a writer goroutine
// since the reader must never write.
func (c *call) Reply(v any, err error) {
	if c.name == "EVALSHA" && isNoScript(err) {
		c.name, c.args = "EVAL", append([]any{c.cmd.script.src}, c.cmd.args[1:]...)
		c.n.tr.(*pipeTransport).conn.Enqueue(c)
		return
	}
	rep := c.n.judge(c.cmd, v, err)
	rep.reloaded = c.name == "EVAL"
	c.deliver(rep)
	if c.fin == nil {
		*c = call{}
		calls.Put(c)
	}
}

// deliver writes the reply to the call's slot and announces it; a failed
// delete that must happen goes to the node's cleanup worker.
func (c *call) deliver(rep reply) {
	if rep.err != nil && c.cmd.redo > 0 {
		c.n.cleaner.add(c.cmd.redone(), true)
	}
	if c.obs != nil {
		c.obs.delivered(c.n, &rep)
	}
	*c.slot = rep
	c.out <- c.idx
	if c.fin != nil {
		if rep.err != nil {
			c.fin.failed.Or(1 << c.idx)
		}
		c.fin.one()
	}
	if c.buf != nil {
		c.buf.unref()
	}
}

// pipeTransport is one auto-pipelined connection to the node.
type pipeTransport struct{ conn *pipeline.Conn }

func newPipeTransport(p Pool, o *owner, stall time.Duration, n *node) *pipeTransport {
	return &pipeTransport{conn: pipeline.New(pipeline.Config{
		Dial:  p.GetContext,
		Setup: n.setup,
		Stall: stall,
		Spawn: o.spawn,
	})}
}

func (t *pipeTransport) start(_ context.Context, c *call) {
	c.name, c.args = c.cmd.name, c.cmd.args
	if c.cmd.script != nil {
		c.name = "EVALSHA"
	}
	t.conn.Send(c)
}

func (t *pipeTransport) fifo() bool { return true }
func (t *pipeTransport) close()     { t.conn.Close() }

// poolTransport borrows a pool connection per command, each in a goroutine
// of the owner bounded by the node timeout.
type poolTransport struct {
	pool        Pool
	o           *owner
	nodeTimeout time.Duration
}

func (t *poolTransport) start(ctx context.Context, c *call) {
	if c.cmd.detached {
		ctx = context.WithoutCancel(ctx)
	}
	if !t.o.spawn(func() { t.run(ctx, c) }) {
		c.deliver(reply{err: c.n.wrap(ErrClosed)})
	}
}

func (t *poolTransport) run(ctx context.Context, c *call) {
	ctx, cancel := context.WithTimeout(ctx, t.nodeTimeout)
	defer cancel()
	conn, err := t.pool.GetContext(ctx)
	if err != nil {
		c.deliver(reply{err: c.n.wrap(err)})
		return
	}
	defer conn.Close()
	var v any
	reloaded := false
	if s := c.cmd.script; s != nil {
		// As redigo's Script.DoContext, but telling the observer when the
		// node had lost the script.
		v, err = redis.DoContext(conn, ctx, "EVALSHA", c.cmd.args...)
		if isNoScript(err) {
			// A node's first use of a script is expected to miss it (pools
			// load nothing up front); later, it lost them.
			reloaded = c.n.scripts.Load()&s.bit != 0
			v, err = redis.DoContext(conn, ctx, "EVAL", append([]any{s.src}, c.cmd.args[1:]...)...)
		}
		if err == nil && c.n.scripts.Load()&s.bit == 0 {
			c.n.scripts.Or(s.bit)
		}
	} else {
		v, err = redis.DoContext(conn, ctx, c.cmd.name, c.cmd.args...)
	}
	rep := c.n.judge(c.cmd, v, err)
	rep.reloaded = reloaded
	c.deliver(rep)
}

func (t *poolTransport) fifo() bool { return false }
func (t *poolTransport) close()     {}
