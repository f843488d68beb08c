package pipeline

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// conn is one dialled connection: writers send on it, the reader receives
// in the order of inflight.
type conn struct {
	rc    redis.Conn
	w     *writer // nil: commands go through redigo's Send and Flush
	rd    *reader // nil: replies come through redigo's Receive
	epoch uint64  // Config.Epoch when dialled
	wait  []any   // Config.Wait
	// waitGate holds a token while a WAIT is written and unanswered: the
	// server runs a connection's commands in turn, so WAITs written one
	// behind another would add their timeouts up when the replicas fall
	// short. A batch that wants one waits for the token instead, and the
	// calls sent meanwhile join the next batch.
	waitGate chan struct{}
	stall    time.Duration
	inflight chan Call
	// unanswered counts the commands written (or being written) whose
	// replies are not in: while there are any, new calls wait for the
	// reader's kick (Conn.Put says why).
	unanswered atomic.Int64
	kick       func()        // the Conn's: write what waits, once nothing is unanswered
	dead       chan struct{} // closed by the reader when the connection failed
	readerDone sync.WaitGroup

	// The reader's own: calls whose reply waits for the batch's trailers,
	// and the batch's WAIT reply until its TIME's.
	held   []Trailed
	waited any
}

// clockMark and waitMark stand in the reader's queue for the TIME and the
// WAIT written behind a batch of Trailed calls. A waitMark's last says
// that no TIME follows it.
type (
	clockMark struct{}
	waitMark  struct {
		args []any
		last bool
	}
)

func (clockMark) Command() (string, []any)  { return "TIME", nil }
func (clockMark) Reply(any, error)          {}
func (m waitMark) Command() (string, []any) { return "WAIT", m.args }
func (waitMark) Reply(any, error)           {}

// write sends a batch and flushes it once, with the trailers behind it
// that its calls want. A batch that wants WAIT first waits until the
// WAIT written before it was answered (waitGate).
func (c *conn) write(batch []Call) {
	wait, clock := false, false
	for _, call := range batch {
		if p, ok := call.(Trailed); ok {
			w, t := p.Trailers()
			wait, clock = wait || w && c.wait != nil, clock || t
		}
	}
	if wait {
		select {
		case c.waitGate <- struct{}{}:
		case <-c.dead:
			for _, call := range batch {
				call.Reply(nil, ErrClosed)
			}
			return
		}
	}
	for i, call := range batch {
		if !c.send(call, batch[i:]) {
			if wait {
				c.openGate()
			}
			return
		}
	}
	if wait && !c.send(waitMark{c.wait, !clock}, batch[:0]) {
		c.openGate()
		return
	}
	if clock {
		c.send(clockMark{}, batch[:0])
	}
	c.flush()
}

// flush writes out what the batch encoded. A failed write breaks the
// connection: the reader then fails what was handed to it.
func (c *conn) flush() {
	if c.w == nil {
		_ = c.rc.Flush() // redigo closes the connection when it fails
		return
	}
	if err := c.w.flush(); err != nil {
		c.rc.Close()
	}
}

// send writes call and queues it for the reader; on failure it fails
// rest, the calls from call on (a clock mark's is empty: it has nobody
// to fail).
func (c *conn) send(call Call, rest []Call) bool {
	name, args := call.Command()
	if c.w != nil {
		c.w.encode(call, name, args)
	} else if err := c.rc.Send(name, args...); err != nil {
		for _, r := range rest {
			r.Reply(nil, err)
		}
		return false
	}
	c.unanswered.Add(1) // before the reader can see it
	select {
	case c.inflight <- call:
		if c.w != nil && c.w.full() {
			c.flush()
		}
		return true
	default:
	}
	// The reader is a full queue behind: it catches up only once what is
	// encoded has gone out (redigo's buffer does that on its own every 4 KB).
	if c.w != nil {
		c.flush()
	}
	select {
	case c.inflight <- call:
		return true
	case <-c.dead:
		c.unanswered.Add(-1)
		for _, r := range rest {
			r.Reply(nil, ErrClosed)
		}
		return false
	}
}

// busy reports whether replies are outstanding.
func (c *conn) busy() bool { return c.unanswered.Load() > 0 }

// readLoop delivers replies in order. An error reply fails its call only;
// a reply overdue by stall, or a connection error, ends the connection and
// fails every call in flight. When the last outstanding reply is in, it
// kicks the write of what queued meanwhile.
func (c *conn) readLoop() {
	defer c.readerDone.Done()
	for call := range c.inflight {
		var v any
		var clock Clock
		var err error
		if _, ok := call.(clockMark); ok {
			clock, err = c.receiveClock()
		} else {
			v, err = c.receive()
		}
		if !answered(err) {
			for _, p := range c.held {
				p.ReplyTrailers(nil, Clock{}, err)
			}
			c.fail(call, err)
			return
		}
		// The count drops before the reply is delivered: a caller that
		// sends again from its reply finds nothing outstanding and writes
		// at once, rather than waiting for the kick.
		last := c.unanswered.Add(-1) == 0
		c.handle(call, v, clock, err)
		if last {
			c.kick()
		}
	}
	for _, p := range c.held { // the writer never leaves a batch without its trailers
		p.ReplyTrailers(nil, Clock{}, ErrClosed)
	}
}

// handle delivers one reply (clock for a clock mark's), or holds it until
// its batch's trailers are in.
func (c *conn) handle(call Call, v any, clock Clock, err error) {
	switch p := call.(type) {
	case waitMark:
		c.openGate()
		if err != nil {
			v = err // WAIT refused (an error reply): each call judges it
		}
		if !p.last {
			c.waited = v
			return
		}
		c.held = deliver(c.held, v, Clock{})
	case clockMark:
		c.held = deliver(c.held, c.waited, clock)
		c.waited = nil
	case Trailed:
		if w, t := p.Trailers(); t || w && c.wait != nil {
			p.Hold(v, err)
			c.held = append(c.held, p)
			return
		}
		call.Reply(v, err)
	default:
		call.Reply(v, err)
	}
}

// receive reads the next reply, waiting at most the stall time for it. A
// connection error closes the connection, so that writers see it fail.
func (c *conn) receive() (any, error) {
	if c.rd == nil {
		return redis.ReceiveWithTimeout(c.rc, c.stall) // closes on failure
	}
	v, err := c.rd.receive()
	if !answered(err) {
		c.rc.Close()
	}
	return v, err
}

// receiveClock reads the reply to a TIME behind a batch, and notes when
// it came. An error reply, or a reply that is not a time, is the Clock's
// Err; the error returned is the connection's.
func (c *conn) receiveClock() (Clock, error) {
	var us int64
	var err error
	if c.rd != nil {
		us, err = c.rd.clock() // no allocation: a batch of votes reads one
		if !answered(err) {
			c.rc.Close()
		}
	} else {
		var v any
		v, err = redis.ReceiveWithTimeout(c.rc, c.stall)
		if err == nil {
			us, err = ParseTime(v)
		}
	}
	if !answered(err) {
		return Clock{}, err
	}
	if err != nil {
		return Clock{Err: err}, nil
	}
	return Clock{Node: us, Read: time.Now().UnixMicro()}, nil
}

// openGate lets the next batch that wants WAIT be written.
func (c *conn) openGate() {
	select {
	case <-c.waitGate:
	default:
	}
}

// deliver ends the held calls with the trailers' replies (an error reply
// in place of one) and returns held emptied.
func deliver(held []Trailed, wait any, clock Clock) []Trailed {
	for i, h := range held {
		h.ReplyTrailers(wait, clock, nil)
		held[i] = nil
	}
	return held[:0]
}

// answered reports whether a receive got a reply, an error reply included.
func answered(err error) bool {
	_, isReply := err.(redis.Error)
	return err == nil || isReply
}

// fail ends call and every call in flight behind it with err, the
// connection's failure, and kicks the Conn: what waits for replies goes to
// a new connection.
func (c *conn) fail(call Call, err error) {
	call.Reply(nil, err)
	close(c.dead)
	c.kick()
	for call := range c.inflight {
		call.Reply(nil, err)
	}
}

func (c *conn) broken() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// shutdown stops the reader after it answered what was written, and
// returns the connection (closed if it failed).
func (c *conn) shutdown() {
	close(c.inflight)
	c.readerDone.Wait()
	c.rc.Close()
}
