package pipeline

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// ErrClosed is the failure of calls sent after Close, or refused a
// goroutine by the owner.
var ErrClosed = errors.New("pipeline: connection closed")

// inflightCap is how many written commands the reader can be behind before
// the writer waits for it.
const inflightCap = 1024

// Call is one command on a Conn.
type Call interface {
	// Command returns the command to write: its name and arguments.
	Command() (name string, args []any)
	// Reply delivers the command's reply, or the error that ended it. It is
	// called exactly once per Send or Enqueue, from the reader or a sender,
	// and must not block. It may hand the call to Enqueue again (a NOSCRIPT
	// retry), never to Send.
	Reply(v any, err error)
}

// Trailed is a Call that may want commands read behind it on the same
// connection, so that their replies come from the same server process and
// from no earlier than the command: WAIT, for the replicas' acknowledgement
// of a write (Config.Wait), and TIME, for the node guard's clock. When
// Trailers reports either, the writer puts one WAIT and then one TIME (each
// only if a call of the batch wants it) behind the batch the call is
// written in, shared by every such call of the batch; the reader hands
// the call's own reply to Hold, and then the trailers' replies (nil for
// one not wanted), or the connection's failure, to ReplyTrailers, which
// ends the call instead of Reply. A failure before its own reply ends it
// with Reply.
type Trailed interface {
	Call
	Trailers() (wait, clock bool)
	Hold(v any, err error)
	ReplyTrailers(wait any, clock Clock, err error)
}

// Clock is the reply to the TIME behind a batch of Trailed calls: the
// node's clock and this machine's when the reply was read, both in µs
// since the Unix epoch; or Err, the TIME's error reply or why its reply is
// not a time. It is the zero Clock when no call of the batch wanted it.
type Clock struct {
	Node, Read int64
	Err        error
}

// Config says how a Conn reaches its node.
type Config struct {
	// Dial opens (or borrows) a connection; Close returns it.
	Dial func(ctx context.Context) (redis.Conn, error)
	// Setup prepares a new connection before its first command (loading
	// scripts, for example); nil for none. It is bounded by Stall.
	Setup func(ctx context.Context, c redis.Conn) error
	// Stall is how long a reply may be overdue before the connection is
	// dropped as hung; it also bounds Dial and Setup.
	Stall time.Duration
	// Spawn starts fn in a goroutine that the owner tracks, or reports
	// false when the owner refuses new work; the calls that needed the
	// goroutine then fail with ErrClosed.
	Spawn func(fn func()) bool
	// Wait is the arguments of the WAIT written behind a batch whose
	// calls want it (numreplicas, timeout in ms); nil: none wants it.
	Wait []any
	// Epoch, when set, names the server that Dial reaches now: a
	// connection dialled under another epoch is replaced before the next
	// write (a cluster node whose master changed).
	Epoch func() uint64
}

// Conn is an auto-pipelined connection to one node.
type Conn struct {
	cfg Config

	mu      sync.Mutex
	idle    *sync.Cond // signalled when writing ends
	kicked  func()     // the drain that kick starts, made once: a kick comes at every batch
	pending []Call     // sent, not yet written, in order
	spare   []Call     // the other batch buffer, reused
	writing bool       // a sender, the drainer or the dialler is writing
	cur     *conn      // nil until dialled
	closed  bool
}

// New returns a Conn; it dials on the first call.
func New(cfg Config) *Conn {
	p := &Conn{cfg: cfg}
	p.idle = sync.NewCond(&p.mu)
	p.kicked = func() {
		// The callers that the last replies woke are about to send: let
		// them join this batch.
		runtime.Gosched()
		p.drain()
	}
	return p
}

// Send queues c and, if nobody is writing and the connection has no
// reply outstanding, writes the queue in the caller's goroutine. It never
// blocks on a dial or on another caller's write.
func (p *Conn) Send(c Call) {
	if p.Put(c) {
		p.Write()
	}
}

// Enqueue queues c like Send but never writes in the caller's goroutine: a
// goroutine of the owner writes it. Reply callbacks use it to send again,
// since the reader must never block on a write.
func (p *Conn) Enqueue(c Call) {
	if p.Put(c) {
		p.write(false)
	}
}

// Put queues c behind every call queued before it, without writing it, and
// reports whether the caller has become the writer: then it must call
// Write, as the queue waits for it. Send is Put and Write at once; a caller
// that queues calls on several Conns in one order, under a lock of its own,
// Puts them all under the lock and Writes once it has released it, so that
// no write holds the lock.
//
// While replies to the last batch are outstanding, nobody becomes the
// writer: the batch waits for them, and the reader starts its write once
// the last is in (kick). The node runs one connection's commands in order,
// so a command written earlier would only wait behind the others on the
// node; waiting here instead gathers every command sent meanwhile into one
// write, and under load each system call, which on loopback also runs the
// node's side of the delivery, carries a round trip's worth of them.
func (p *Conn) Put(c Call) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.Reply(nil, ErrClosed)
		return false
	}
	p.pending = append(p.pending, c)
	writer := !p.writing && (p.cur == nil || p.outdated(p.cur) || !p.cur.busy())
	p.writing = p.writing || writer
	p.mu.Unlock()
	return writer
}

// Write writes the queue for the caller that Put made the writer, in the
// caller's goroutine when it can. It never blocks on a dial.
func (p *Conn) Write() { p.write(true) }

// write takes the writer's turn: a goroutine dials when there is no usable
// connection, and writes when inline is false; otherwise the caller writes
// one batch.
func (p *Conn) write(inline bool) {
	p.mu.Lock()
	stale := p.cur == nil || p.outdated(p.cur)
	p.mu.Unlock()
	switch {
	case stale:
		p.start(p.redial)
	case !inline:
		p.start(p.drain)
	default:
		p.flush()
	}
}

// kick writes what queued while replies were outstanding, in a goroutine
// of the owner: the reader calls it when the last one is in.
func (p *Conn) kick() {
	p.mu.Lock()
	if p.writing || len(p.pending) == 0 {
		p.mu.Unlock()
		return
	}
	p.writing = true
	p.mu.Unlock()
	p.start(p.kicked)
}

// start runs a writer role (redial or drain) in an owned goroutine; when
// the owner refuses, the queue fails.
func (p *Conn) start(fn func()) {
	if !p.cfg.Spawn(fn) {
		p.failPending(ErrClosed)
	}
}

// failPending fails what is queued and ends the writer role.
func (p *Conn) failPending(err error) {
	p.mu.Lock()
	batch := p.pending
	p.pending = nil
	p.writing = false
	p.idle.Broadcast()
	p.mu.Unlock()
	for _, c := range batch {
		c.Reply(nil, err)
	}
}

// flush writes one batch, which holds the caller's own command, and hands
// what queued meanwhile to the reader's kick or a goroutine, so that no
// caller keeps writing for others.
func (p *Conn) flush() {
	p.writeBatch()
	p.drainLater()
}

// drain writes batches until the queue is empty or waits for replies,
// also while closing: what was sent before Close is written (Close waits
// for it).
func (p *Conn) drain() {
	for {
		p.mu.Lock()
		if p.cur == nil || p.outdated(p.cur) {
			if len(p.pending) == 0 {
				p.endWriting()
				return
			}
			p.mu.Unlock()
			p.redial()
			return
		}
		if !p.mustWrite() {
			p.endWriting()
			return
		}
		p.mu.Unlock()
		p.writeBatch()
	}
}

// drainLater ends the writer role after a write: the reader's kick writes
// what queued meanwhile once the replies are in, unless they are in
// already or the connection is closing, when a goroutine writes it now.
func (p *Conn) drainLater() {
	p.mu.Lock()
	if !p.mustWrite() {
		p.endWriting()
		return
	}
	p.mu.Unlock()
	p.start(p.drain)
}

// mustWrite reports whether the writer should write the queue now: it
// holds calls, and no reply is outstanding to bring the kick, or Close
// waits for it. p.mu is held.
func (p *Conn) mustWrite() bool {
	return len(p.pending) > 0 && (p.closed || !p.cur.busy())
}

// endWriting gives the writer role up and unlocks p.mu.
func (p *Conn) endWriting() {
	p.writing = false
	p.idle.Broadcast()
	p.mu.Unlock()
}

// writeBatch writes what is queued now, reusing the batch buffers.
func (p *Conn) writeBatch() {
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
func (p *Conn) redial() {
	c, err := p.dial()
	p.mu.Lock()
	if err == nil && p.closed {
		err = ErrClosed
	}
	if err != nil {
		p.mu.Unlock()
		if c != nil {
			c.shutdown()
		}
		p.failPending(err)
		return
	}
	old := p.cur
	p.cur = c
	p.mu.Unlock()
	if old != nil {
		old.shutdown()
	}
	p.drain()
}

// outdated reports whether c must be replaced: it failed, or it reaches a
// server of an earlier epoch.
func (p *Conn) outdated(c *conn) bool {
	return c.broken() || p.cfg.Epoch != nil && c.epoch != p.cfg.Epoch()
}

// dial takes a connection, prepares it and starts its reader.
func (p *Conn) dial() (*conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Stall)
	defer cancel()
	var epoch uint64
	if p.cfg.Epoch != nil {
		epoch = p.cfg.Epoch() // before the dial: a change during it redials
	}
	rc, err := p.cfg.Dial(ctx)
	if err != nil {
		return nil, err
	}
	if p.cfg.Setup != nil {
		if err := p.cfg.Setup(ctx, rc); err != nil {
			rc.Close()
			return nil, err
		}
	}
	w, rd := socketIO(rc, p.cfg.Stall)
	c := &conn{rc: rc, w: w, rd: rd, kick: p.kick, epoch: epoch, wait: p.cfg.Wait, waitGate: make(chan struct{}, 1), stall: p.cfg.Stall, inflight: make(chan Call, inflightCap), dead: make(chan struct{})}
	c.readerDone.Add(1)
	if !p.cfg.Spawn(c.readLoop) {
		c.readerDone.Done()
		rc.Close()
		return nil, ErrClosed
	}
	return c, nil
}

// Close waits until what was sent is written, shuts the connection once its
// replies are in (or overdue), and fails what could not be written. Calls
// sent afterwards fail at once with ErrClosed.
func (p *Conn) Close() {
	p.mu.Lock()
	p.closed = true
	if !p.writing && len(p.pending) > 0 { // a batch waiting for replies: write it now
		p.writing = true
		p.mu.Unlock()
		p.drain()
		p.mu.Lock()
	}
	for p.writing {
		p.idle.Wait()
	}
	batch, cur := p.pending, p.cur
	p.pending, p.cur = nil, nil
	p.mu.Unlock()
	for _, c := range batch {
		c.Reply(nil, ErrClosed)
	}
	if cur != nil {
		cur.shutdown()
	}
}
