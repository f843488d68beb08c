package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redlockplus/redlock/internal/pipeline"
)

// transport carries commands to one node. Three implementations exist:
// one auto-pipelined connection per node (pipeTransport, a Factory's
// default over redigo pools), a goroutine per command over a Node
// (nodeTransport: a redigo pool with WithPipelining(false) or NewLock, or
// a Node of another client), and batches over a Batcher (batchTransport).
// Only the pipelined one keeps the order of commands (nodeGroup.fifo);
// the key-set layer (keyset.go) is the one place that cares.
type transport interface {
	// start sends c's command and returns at once; c.deliver is called
	// exactly once with the node's reply or failure, never blocking. The
	// command runs to its end or its node timeout whatever ctx does: a SET
	// must finish so that its fate is known, and a delete must reach slow
	// nodes too. ctx brings only its values (for a client's hooks); a
	// transport that hands it on to a client or a slot map read takes its
	// cancellation off first (context.WithoutCancel).
	start(ctx context.Context, c *call)
	// close stops the transport once what was started has been written;
	// later calls fail with ErrClosed.
	close()
}

// call is one command on one node, with where its reply goes.
type call struct {
	cmd  *command
	n    *node
	name string // the command as written: EVALSHA, then EVAL on NOSCRIPT
	args []any
	idx  uint8     // the node's slot in buf
	fin  *finish   // pool rounds: counts the calls still running
	buf  *roundBuf // the round's buffer, held until delivered
	obs  *observer // told of the node's failure; nil: nobody listens
	sent int64     // when the round was sent, µs on the wall clock: for the clock guard
	// held is the command's own reply, waiting for its trailers' (WAIT,
	// TIME: pipeline.Trailed).
	held    any
	heldErr error
	// wantWait and wantClock are its Trailers, noted once by prepare: the
	// writer and the reader ask on other goroutines, where the command and
	// the node are a cache miss away.
	wantWait, wantClock bool
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
	if c.n.cluster != nil {
		c.n.cluster.saw(err)
	}
	if c.name == "EVALSHA" && isNoScript(err) {
		c.name, c.args = "EVAL", append([]any{c.cmd.script.src}, c.args[1:]...)
		c.n.tr.(*pipeTransport).conn.Enqueue(c)
		return
	}
	c.settle(c.n.judge(c, v, err))
}

// settle delivers the judged reply, marked when the node had lost the
// script (it ran as EVAL).
func (c *call) settle(rep reply) {
	rep.reloaded = c.name == "EVAL"
	c.deliver(rep)
}

// Wire implements pipeline.Encoded: the command's RESP, when it is
// encoded once for every node (command.enc) and written as built (not as
// EVAL after NOSCRIPT, nor tagged for a cluster node).
func (c *call) Wire() []byte {
	enc := c.cmd.enc
	if enc == nil || c.name != "EVALSHA" || c.n.cluster != nil {
		return nil
	}
	enc.once.Do(func() { enc.buf = pipeline.AppendCommand(enc.buf, c.name, c.args) })
	return enc.buf
}

// Trailers implements pipeline.Trailed: a write under WithReplicaAck
// wants WAIT behind it, and a vote under the node guard wants the node's
// TIME (guard.go).
func (c *call) Trailers() (wait, clock bool) { return c.wantWait, c.wantClock }

// Hold implements pipeline.Trailed: the command's own reply, kept until
// its trailers'.
func (c *call) Hold(v any, err error) { c.held, c.heldErr = v, err }

// ReplyTrailers implements pipeline.Trailed: the WAIT and TIME read behind
// the command. The command's own error reply comes first (NOSCRIPT sends
// it again as EVAL); then too few replicas fail it; then the clock is the
// vote's evidence.
func (c *call) ReplyTrailers(wait any, clock pipeline.Clock, err error) {
	v, verr := c.held, c.heldErr
	if err != nil {
		c.deliver(reply{err: c.n.wrap(err)})
		return
	}
	if verr != nil {
		c.Reply(v, verr)
		return
	}
	w, t := c.Trailers()
	if w {
		if err := checkAck(wait, c.n.ack); err != nil {
			c.deliver(reply{err: c.n.wrap(err)})
			return
		}
	}
	if !t {
		c.Reply(v, nil)
		return
	}
	if clock.Err != nil {
		c.deliver(reply{err: c.n.wrap(fmt.Errorf("TIME after the vote: %w", clock.Err))})
		return
	}
	c.settle(c.n.judgeVote(c, v, evidence{clock: clock.Node, got: clock.Read, lastsave: -1}))
}

// deliver writes the reply to the call's slot and announces it; a failed
// delete that must happen goes to the node's cleanup worker. It recycles
// the call, on every transport: nothing may use it after deliver.
func (c *call) deliver(rep reply) {
	if rep.err != nil && c.cmd.deleteTTL > 0 && !errors.Is(rep.err, ErrReplicaAck) { // unacknowledged, the delete did happen
		for _, d := range c.cmd.discards() {
			c.n.cleaner.add(d, true)
		}
	}
	if c.obs != nil {
		c.obs.delivered(c.n, &rep)
	}
	c.buf.slots[c.idx] = rep
	c.buf.arrive(c.idx, rep.err == nil && rep.ok, rep.err == nil && !rep.ok)
	if c.fin != nil {
		if rep.err != nil {
			c.fin.failed.Or(1 << c.idx)
		}
		c.fin.one()
	}
	b := c.buf
	*c = call{} // before unref: the buffer holds a round's calls, and a new round may take it
	b.unref()
}

// pipeTransport is one auto-pipelined connection to the node. The node
// runs its commands in the order they were queued, and the rounds queue
// theirs on every node in one order (fanout.start).
type pipeTransport struct{ conn *pipeline.Conn }

func newPipeTransport(p Pool, o *owner, stall time.Duration, n *node) *pipeTransport {
	cfg := pipeline.Config{
		Dial:  pipelineDial(p),
		Setup: n.setup,
		Stall: stall,
		Spawn: o.spawn,
	}
	if n.cluster != nil {
		cfg.Epoch = n.cluster.epoch.Load // a new master: a new connection
	}
	cfg.Wait = n.ack
	return &pipeTransport{conn: pipeline.New(cfg)}
}

func (t *pipeTransport) start(ctx context.Context, c *call) {
	t.prepare(ctx, c)
	t.conn.Send(c)
}

// prepare writes c's command as this node takes it. A cluster node reads
// its slot map first when it is stale, which may take the node timeout.
func (t *pipeTransport) prepare(ctx context.Context, c *call) {
	c.name, c.args = c.cmd.name, c.cmd.args
	if cn := c.n.cluster; cn != nil {
		cn.fresh(ctx, c.n.set.nodeTimeout)
		c.args = c.cmd.tagged(cn.tag())
	}
	if c.cmd.script != nil {
		c.name = "EVALSHA"
	}
	c.wantWait, c.wantClock = c.n.ack != nil && c.cmd.writes(), c.cmd.vote != nil
}

func (t *pipeTransport) close() { t.conn.Close() }
