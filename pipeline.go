package redlock

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// errPipelineClosed is the failure of calls made after the factory closed.
var errPipelineClosed = errors.New("connection pipeline closed")

// inflightCap is how many written commands a connection's reader can be
// behind before the writer waits for it.
const inflightCap = 1024

// pcall is one command queued on a pipeline, for one node of a quorum
// round. done is called exactly once and never blocks.
type pcall struct {
	name  string
	args  []any
	ctx   context.Context
	node  *node
	cmd   nodeCmd      // reads the reply
	slots []reply      // the round's replies, one per node
	out   chan<- uint8 // announces the node's reply; buffered to the node count
}

// pcalls recycles pcall values: one is needed per node and command.
var pcalls = sync.Pool{New: func() any { return new(pcall) }}

// done delivers the reply and recycles c.
func (c *pcall) done(v any, err error) {
	c.node.complete(c, v, err)
	*c = pcall{}
	pcalls.Put(c)
}

// pipeline multiplexes the commands of many concurrent lock operations on
// one node over one connection taken from the node's pool. Commands are
// written in the order they were sent, as batches: the first caller to find
// nobody writing becomes the writer and flushes its command together with
// whatever other callers queued meanwhile (flat combining), so there is no
// hop through a writer goroutine. A reader goroutine matches the replies in
// order. When there is no usable connection, a short-lived goroutine dials
// one, so a caller never blocks on a dial. Nobody waits for a reply here:
// callers bound their own wait and ignore a reply that comes after they
// left. The connection is dropped when a reply is overdue by stall (the node
// hung), failing the calls in flight, and dialled again for the next call.
type pipeline struct {
	pool  Pool
	stall time.Duration
	setup []string // scripts loaded on every new connection
	bg    *sync.WaitGroup

	mu      sync.Mutex
	idle    *sync.Cond // signalled when writing ends
	pending []*pcall   // sent, not yet written, in order
	spare   []*pcall   // the other batch buffer, reused
	writing bool       // a caller or the dialler is writing
	cur     *pconn     // nil until dialled
	closed  bool
}

// minStall is the least time a pipelined reply may be overdue before its
// connection is dropped: callers stop waiting after their node timeout
// anyway, so only a connection that is clearly hung is given up.
const minStall = 250 * time.Millisecond

func newPipeline(pool Pool, nodeTimeout time.Duration, bg *sync.WaitGroup) *pipeline {
	p := &pipeline{pool: pool, stall: max(nodeTimeout, minStall), setup: scriptSources(), bg: bg}
	p.idle = sync.NewCond(&p.mu)
	return p
}

// send queues a command and, if nobody is writing, writes the queue. It
// never blocks on a dial.
func (p *pipeline) send(_ context.Context, c *pcall) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.done(nil, errPipelineClosed)
		return
	}
	p.pending = append(p.pending, c)
	if p.writing {
		p.mu.Unlock()
		return
	}
	p.writing = true
	if p.cur == nil || p.cur.broken() {
		p.bg.Add(1)
		go p.redial()
		p.mu.Unlock()
		return
	}
	busy := len(p.cur.inflight) > 0
	p.mu.Unlock()
	if busy {
		// The node is still answering earlier commands: let the other
		// callers that are about to send join this batch, saving writes.
		runtime.Gosched()
	}
	p.flush()
}

// flush writes the queue; the caller is the writer. A caller writes one
// batch, which holds its own command, and hands what queued meanwhile to a
// goroutine, so that no caller is kept writing for others.
func (p *pipeline) flush() {
	p.writeBatch()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pending) == 0 {
		p.writing = false
		p.idle.Broadcast()
		return
	}
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		p.drain()
	}()
}

// drain writes batches until the queue is empty, also while closing: what
// was sent before close is written (close waits for it).
func (p *pipeline) drain() {
	for {
		p.mu.Lock()
		if len(p.pending) == 0 {
			p.writing = false
			p.idle.Broadcast()
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		p.writeBatch()
	}
}

// writeBatch writes what is queued now, reusing the batch buffers.
func (p *pipeline) writeBatch() {
	p.mu.Lock()
	batch, cur := p.pending, p.cur
	p.pending, p.spare = p.spare[:0], nil
	p.mu.Unlock()
	cur.write(batch)
	clear(batch)
	p.mu.Lock()
	p.spare = batch[:0]
	p.mu.Unlock()
}

// redial replaces a missing or broken connection and writes the queue on
// it; on failure it fails what is queued.
func (p *pipeline) redial() {
	defer p.bg.Done()
	pc, err := p.dial()
	p.mu.Lock()
	if err == nil && p.closed {
		err = errPipelineClosed
	}
	if err != nil {
		batch := p.pending
		p.pending = nil
		p.writing = false
		p.idle.Broadcast()
		p.mu.Unlock()
		for _, c := range batch {
			c.done(nil, err)
		}
		if pc != nil {
			pc.shutdown()
		}
		return
	}
	old := p.cur
	p.cur = pc
	p.mu.Unlock()
	if old != nil {
		old.shutdown()
	}
	p.drain()
}

// close waits until what was sent is written, shuts the connection once its
// replies are in (or overdue), and fails what could not be written. Calls
// sent afterwards fail at once.
func (p *pipeline) close() {
	p.mu.Lock()
	p.closed = true
	for p.writing {
		p.idle.Wait()
	}
	batch, cur := p.pending, p.cur
	p.pending, p.cur = nil, nil
	p.mu.Unlock()
	for _, c := range batch {
		c.done(nil, errPipelineClosed)
	}
	if cur != nil {
		cur.shutdown()
	}
}

// dial takes a connection from the pool, loads the scripts on it and starts
// its reader.
func (p *pipeline) dial() (*pconn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), p.stall)
	defer cancel()
	c, err := p.pool.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	if err := loadPipelined(ctx, c, p.setup); err != nil {
		c.Close()
		return nil, err
	}
	pc := &pconn{c: c, stall: p.stall, inflight: make(chan *pcall, inflightCap), dead: make(chan struct{})}
	pc.readerDone.Add(1)
	go pc.readLoop()
	return pc, nil
}

// loadPipelined loads scripts in one round trip, so that a distant node
// gets a connection as soon as a near one.
func loadPipelined(ctx context.Context, c redis.Conn, srcs []string) error {
	for _, src := range srcs {
		if err := c.Send("SCRIPT", "LOAD", src); err != nil {
			return err
		}
	}
	replies, err := redis.Values(redis.DoContext(c, ctx, "")) // flushes and reads every reply
	if err != nil {
		return err
	}
	for _, r := range replies {
		if e, ok := r.(redis.Error); ok {
			return e
		}
	}
	return nil
}

// pconn is one pipelined connection: the writer sends on it, the reader
// receives in the order of inflight.
type pconn struct {
	c          redis.Conn
	stall      time.Duration
	inflight   chan *pcall
	dead       chan struct{} // closed by the reader when the connection failed
	readerDone sync.WaitGroup
}

// write sends a batch and flushes it once.
func (pc *pconn) write(batch []*pcall) {
	for i, c := range batch {
		if err := pc.c.Send(c.name, c.args...); err != nil {
			for _, rest := range batch[i:] {
				rest.done(nil, err)
			}
			return
		}
		select {
		case pc.inflight <- c:
		case <-pc.dead:
			for _, rest := range batch[i:] {
				rest.done(nil, errPipelineClosed)
			}
			return
		}
	}
	if err := pc.c.Flush(); err != nil {
		// The reader fails what was handed to it once it sees the error.
		return
	}
}

// readLoop delivers replies in order. A reply overdue by stall, or any
// connection error, ends the connection and fails every call in flight.
func (pc *pconn) readLoop() {
	defer pc.readerDone.Done()
	for c := range pc.inflight {
		v, err := redis.ReceiveWithTimeout(pc.c, pc.stall)
		if err != nil {
			if _, isReply := err.(redis.Error); isReply {
				c.done(nil, err)
				continue
			}
			c.done(nil, err)
			close(pc.dead)
			for c := range pc.inflight {
				c.done(nil, err)
			}
			return
		}
		c.done(v, nil)
	}
}

func (pc *pconn) broken() bool {
	select {
	case <-pc.dead:
		return true
	default:
		return false
	}
}

// shutdown stops the reader after it answered what was written, and returns
// the connection to its pool (closed if it failed).
func (pc *pconn) shutdown() {
	close(pc.inflight)
	pc.readerDone.Wait()
	pc.c.Close()
}
