package redlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// errPipelineClosed is the failure of calls made after the factory closed.
var errPipelineClosed = errors.New("connection pipeline closed")

// maxBatch bounds how many queued commands one flush writes.
const maxBatch = 256

// pcall is one command queued on a pipeline, for one node of a quorum
// round. done is called exactly once and never blocks.
type pcall struct {
	name string
	args []any
	ctx  context.Context
	node *node
	cmd  *nodeCmd     // reads the reply
	out  chan<- reply // receives it; buffered to the round's node count
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
// one node over one connection taken from the node's pool. A writer
// goroutine flushes whatever is queued as one batch; a reader goroutine
// matches the replies in order. Nobody waits for a reply here: callers bound
// their own wait with a timer and ignore a reply that comes after they left.
// The connection is dropped when a reply is overdue by stall (the node hung),
// failing the calls in flight, and dialled again for the next call.
type pipeline struct {
	pool  Pool
	stall time.Duration
	setup []string // scripts loaded on every new connection

	queue chan *pcall
	quit  chan struct{}
	bg    *sync.WaitGroup
	once  sync.Once // starts the writer on first use
}

// minStall is the least time a pipelined reply may be overdue before its
// connection is dropped: callers stop waiting after their node timeout
// anyway, so only a connection that is clearly hung is given up.
const minStall = 250 * time.Millisecond

func newPipeline(pool Pool, nodeTimeout time.Duration, bg *sync.WaitGroup) *pipeline {
	return &pipeline{
		pool:  pool,
		stall: max(nodeTimeout, minStall),
		setup: scriptSources(),
		queue: make(chan *pcall, 4*maxBatch),
		quit:  make(chan struct{}),
		bg:    bg,
	}
}

// send queues a command. It never blocks longer than ctx allows.
func (p *pipeline) send(ctx context.Context, c *pcall) {
	p.once.Do(func() {
		p.bg.Add(1)
		go func() {
			defer p.bg.Done()
			p.writeLoop()
		}()
	})
	select {
	case <-p.quit:
		c.done(nil, errPipelineClosed)
		return
	default:
	}
	select {
	case p.queue <- c:
	case <-p.quit:
		c.done(nil, errPipelineClosed)
	case <-ctx.Done():
		c.done(nil, ctx.Err())
	}
}

// close stops the writer, which fails what is still queued and closes the
// connection. Calls sent afterwards fail at once.
func (p *pipeline) close() {
	p.once.Do(func() {}) // a writer never started stays so
	close(p.quit)
}

// writeLoop owns the connection: it dials on demand, writes batches, and
// hands the written calls to the reader of that connection.
func (p *pipeline) writeLoop() {
	var cur *pconn
	defer func() {
		if cur != nil {
			cur.shutdown()
		}
		p.failQueued(errPipelineClosed)
	}()
	batch := make([]*pcall, 0, maxBatch)
	for {
		var first *pcall
		select {
		case first = <-p.queue:
		case <-p.quit:
			return
		}
		batch = append(batch[:0], first)
	drain:
		for len(batch) < maxBatch {
			select {
			case c := <-p.queue:
				batch = append(batch, c)
			default:
				break drain
			}
		}
		if cur != nil && cur.broken() {
			cur.shutdown()
			cur = nil
		}
		if cur == nil {
			var err error
			if cur, err = p.dial(); err != nil {
				for _, c := range batch {
					c.done(nil, err)
				}
				continue
			}
		}
		cur.write(batch)
	}
}

// failQueued fails every call still in the queue.
func (p *pipeline) failQueued(err error) {
	for {
		select {
		case c := <-p.queue:
			c.done(nil, err)
		default:
			return
		}
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
	for _, src := range p.setup {
		if _, err := redis.DoContext(c, ctx, "SCRIPT", "LOAD", src); err != nil {
			c.Close()
			return nil, err
		}
	}
	pc := &pconn{c: c, stall: p.stall, inflight: make(chan *pcall, 4*maxBatch), dead: make(chan struct{})}
	pc.readerDone.Add(1)
	go pc.readLoop()
	return pc, nil
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
