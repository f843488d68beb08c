package redlock

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// batchTransport carries commands to a Batcher. A command started while
// fewer than maxBatches batches are under way is sent by a new goroutine
// of the owner as soon as it has yielded once (see send), so that it never
// waits for an earlier command's round trip; once that many are under way, commands queue, and each
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

// send runs batches until the queue is empty. Before it takes the queue it
// yields (runtime.Gosched): the callers that its start or its last batch's
// replies made runnable then start their next commands first, which join
// this batch instead of the next. Under load that makes a few large
// batches instead of many small ones, and each batch costs a write and a
// read on both sides (W2 over go-redis: 0.65 server reads per cycle
// without the yield, 0.22 with it, 0.2 on the redigo path); alone, it
// costs a return from the scheduler.
func (t *batchTransport) send() {
	var b batch
	for {
		runtime.Gosched()
		q := t.take()
		if q == nil {
			return
		}
		b.run(t, q)
		t.mu.Lock()
		clear(q)
		t.spare = q[:0]
		t.mu.Unlock()
	}
}

// batch is a sender's storage for the commands of its batches, reused
// from one batch to the next.
type batch struct {
	cmds []Command
	keys []string // the scripts' keys, which the commands' Keys slice
}

// run sends one batch and delivers its replies. The batch carries the
// values of its first command's context, not its cancellation: a caller
// that stops waiting does not take the others' commands with it.
func (b *batch) run(t *batchTransport, q []queued) {
	sent := q[:0]
	for _, e := range q {
		if err := b.add(e.c); err != nil {
			e.c.deliver(reply{err: e.c.n.wrap(err)})
			e.c.recycle()
			continue
		}
		sent = append(sent, e)
	}
	if len(sent) == 0 {
		return
	}
	q = sent
	ctx, cancel := context.WithTimeout(context.WithoutCancel(q[0].ctx), t.nodeTimeout)
	t.node.DoBatch(ctx, b.cmds)
	cancel()
	for i, e := range q {
		v, err := fromNode(b.cmds[i].Reply, b.cmds[i].Err)
		e.c.deliver(e.c.n.judge(e.c.cmd, v, err))
		e.c.recycle()
	}
	clear(b.cmds)
	b.cmds = b.cmds[:0]
	clear(b.keys)
	b.keys = b.keys[:0]
}

// add appends a call's command as a Batcher takes it.
func (b *batch) add(c *call) error {
	s := c.cmd.script
	if s == nil {
		b.cmds = append(b.cmds, Command{Name: c.cmd.name, Args: c.cmd.args})
		return nil
	}
	from := len(b.keys)
	keys, args, err := scriptArgs(b.keys, c.cmd.args[1:])
	if err != nil {
		b.keys = keys[:from]
		return err
	}
	b.keys = keys
	b.cmds = append(b.cmds, Command{Script: s.pub, Keys: keys[from:len(keys):len(keys)], Args: args})
	return nil
}

func (t *batchTransport) fifo() bool { return false }

// close does nothing: the clients are the caller's.
func (t *batchTransport) close() {}
