package pipeline

import (
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// conn is one dialled connection: writers send on it, the reader receives
// in the order of inflight.
type conn struct {
	rc         redis.Conn
	stall      time.Duration
	inflight   chan Call
	dead       chan struct{} // closed by the reader when the connection failed
	readerDone sync.WaitGroup
}

// clockMark stands in the reader's queue for the TIME written behind a
// batch of Clocked calls; it carries no state.
type clockMark struct{}

func (clockMark) Command() (string, []any) { return "TIME", nil }
func (clockMark) Reply(any, error)         {}

// write sends a batch and flushes it once, with one TIME behind it when a
// call of the batch wants the clock.
func (c *conn) write(batch []Call) {
	clocked := false
	for i, call := range batch {
		if p, ok := call.(Clocked); ok && p.WantsClock() {
			clocked = true
		}
		if !c.send(call, batch[i:]) {
			return
		}
	}
	if clocked {
		c.send(clockMark{}, batch[:0])
	}
	// A failed flush breaks the connection: the reader then fails what was
	// handed to it.
	_ = c.rc.Flush()
}

// send writes call and queues it for the reader; on failure it fails
// rest, the calls from call on (a clock mark's is empty: it has nobody
// to fail).
func (c *conn) send(call Call, rest []Call) bool {
	name, args := call.Command()
	if err := c.rc.Send(name, args...); err != nil {
		for _, r := range rest {
			r.Reply(nil, err)
		}
		return false
	}
	select {
	case c.inflight <- call:
		return true
	case <-c.dead:
		for _, r := range rest {
			r.Reply(nil, ErrClosed)
		}
		return false
	}
}

// readLoop delivers replies in order. An error reply fails its call only;
// a reply overdue by stall, or a connection error, ends the connection and
// fails every call in flight.
func (c *conn) readLoop() {
	defer c.readerDone.Done()
	var held []Clocked // calls whose reply waits for the batch's TIME
	for call := range c.inflight {
		v, err := redis.ReceiveWithTimeout(c.rc, c.stall)
		if !answered(err) {
			for _, p := range held {
				p.ReplyClock(nil, err)
			}
			c.fail(call, err)
			return
		}
		switch p := call.(type) {
		case clockMark:
			for i, h := range held {
				h.ReplyClock(v, err)
				held[i] = nil
			}
			held = held[:0]
		case Clocked:
			if p.WantsClock() {
				p.Hold(v, err)
				held = append(held, p)
				continue
			}
			call.Reply(v, err)
		default:
			call.Reply(v, err)
		}
	}
	for _, p := range held { // the writer never leaves a batch without its TIME
		p.ReplyClock(nil, ErrClosed)
	}
}

// answered reports whether a receive got a reply, an error reply included.
func answered(err error) bool {
	_, isReply := err.(redis.Error)
	return err == nil || isReply
}

// fail ends call and every call in flight behind it with err, the
// connection's failure.
func (c *conn) fail(call Call, err error) {
	call.Reply(nil, err)
	close(c.dead)
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
