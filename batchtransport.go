package redlock

import (
	"context"
	"sync"
	"time"
)

// batchTransport carries commands to a Batcher: one goroutine of the owner
// at a time sends whatever was started meanwhile as one batch, waits for
// its replies and delivers them, and exits once nothing is queued. It is
// not FIFO: a batch given up at its deadline may still reach the node
// after the next one, which goes on another connection.
type batchTransport struct {
	node        Batcher
	o           *owner
	nodeTimeout time.Duration

	mu      sync.Mutex
	queue   []queued
	spare   []queued // the previous batch's slice, reused
	running bool     // a sender goroutine is under way
}

// queued is a started call with the context whose values its command
// carries (for the client's hooks).
type queued struct {
	ctx context.Context
	c   *call
}

func (t *batchTransport) start(ctx context.Context, c *call) {
	t.mu.Lock()
	t.queue = append(t.queue, queued{ctx, c})
	if t.running {
		t.mu.Unlock()
		return
	}
	t.running = true
	t.mu.Unlock()
	if !t.o.spawn(t.send) { // the factory is closed: fail what is queued
		t.mu.Lock()
		q := t.queue
		t.queue, t.running = nil, false
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
		t.running = false
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
	keys, args, err := scriptArgs(c.cmd.args)
	return Command{Script: s.pub, Keys: keys, Args: args}, err
}

func (t *batchTransport) fifo() bool { return false }

// close does nothing: the clients are the caller's.
func (t *batchTransport) close() {}
