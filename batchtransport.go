package redlock

import (
	"context"
	"sync"
	"time"
)

// batchTransport carries commands to a Batcher. A command started while
// fewer than maxBatches batches are under way is sent at once by a new
// goroutine of the owner, so that it never waits for an earlier command's
// round trip; once that many are under way, commands queue, and each
// sender, when its batch is done, sends whatever queued meanwhile as one
// batch, and exits once nothing is queued. It is not FIFO: concurrent
// batches may use several connections.
type batchTransport struct {
	node        Batcher
	o           *owner
	nodeTimeout time.Duration

	mu      sync.Mutex
	queue   []queued
	spare   []queued // a previous batch's slice, reused
	senders int      // sender goroutines under way
}

// maxBatches bounds the batches under way on one node: beyond it commands
// are gathered into batches, which costs less per command than more round
// trips at once.
const maxBatches = 4

// queued is a started call with the context whose values its command
// carries (for the client's hooks).
type queued struct {
	ctx context.Context
	c   *call
}

func (t *batchTransport) start(ctx context.Context, c *call) {
	t.mu.Lock()
	t.queue = append(t.queue, queued{ctx, c})
	if t.senders >= maxBatches {
		t.mu.Unlock()
		return
	}
	t.senders++
	t.mu.Unlock()
	if !t.o.spawn(t.send) { // the factory is closed: fail what is queued
		t.mu.Lock()
		q := t.queue
		t.queue = nil
		t.senders--
		t.mu.Unlock()
		for _, e := range q {
			e.c.deliver(reply{err: e.c.n.wrap(ErrClosed)})
		}
	}
}

// take empties the queue, or ends the sender when it is empty.
func (t *batchTransport) take() []queued {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.queue
	if len(q) == 0 {
		t.senders--
		return nil
	}
	t.queue, t.spare = t.spare[:0], nil
	return q
}

// send runs batches until the queue is empty.
func (t *batchTransport) send() {
	var cmds []Command
	for {
		q := t.take()
		if q == nil {
			return
		}
		cmds = t.run(q, cmds[:0])
		t.mu.Lock()
		clear(q)
		t.spare = q[:0]
		t.mu.Unlock()
	}
}

// run sends one batch and delivers its replies. The batch carries the
// values of its first command's context, not its cancellation: a caller
// that stops waiting does not take the others' commands with it.
func (t *batchTransport) run(q []queued, cmds []Command) []Command {
	sent := q[:0]
	for _, e := range q {
		cmd, err := commandOf(e.c)
		if err != nil {
			e.c.deliver(reply{err: e.c.n.wrap(err)})
			continue
		}
		cmds = append(cmds, cmd)
		sent = append(sent, e)
	}
	if len(sent) == 0 {
		return cmds
	}
	q = sent
	ctx, cancel := context.WithTimeout(context.WithoutCancel(q[0].ctx), t.nodeTimeout)
	t.node.DoBatch(ctx, cmds)
	cancel()
	for i, e := range q {
		v, err := fromNode(cmds[i].Reply, cmds[i].Err)
		e.c.deliver(e.c.n.judge(e.c.cmd, v, err))
	}
	clear(cmds)
	return cmds
}

// commandOf is a call's command as a Batcher takes it.
func commandOf(c *call) (Command, error) {
	s := c.cmd.script
	if s == nil {
		return Command{Name: c.cmd.name, Args: c.cmd.args}, nil
	}
	keys, args, err := scriptArgs(c.cmd.args[1:])
	return Command{Script: s.pub, Keys: keys, Args: args}, err
}

func (t *batchTransport) fifo() bool { return false }

// close does nothing: the clients are the caller's.
func (t *batchTransport) close() {}
