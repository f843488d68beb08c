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

// write sends a batch and flushes it once.
func (c *conn) write(batch []Call) {
	for i, call := range batch {
		name, args := call.Command()
		err := c.rc.Send(name, args...)
		if p, ok := call.(Paired); ok && err == nil {
			if name, args, ok := p.Second(); ok {
				err = c.rc.Send(name, args...)
			}
		}
		if err != nil {
			for _, rest := range batch[i:] {
				rest.Reply(nil, err)
			}
			return
		}
		select {
		case c.inflight <- call:
		case <-c.dead:
			for _, rest := range batch[i:] {
				rest.Reply(nil, ErrClosed)
			}
			return
		}
	}
	// A failed flush breaks the connection: the reader then fails what was
	// handed to it.
	_ = c.rc.Flush()
}

// readLoop delivers replies in order. An error reply fails its call only;
// a reply overdue by stall, or a connection error, ends the connection and
// fails every call in flight.
func (c *conn) readLoop() {
	defer c.readerDone.Done()
	for call := range c.inflight {
		v, err := redis.ReceiveWithTimeout(c.rc, c.stall)
		if !answered(err) {
			c.fail(call, err)
			return
		}
		if p, ok := call.(Paired); ok {
			if _, _, ok := p.Second(); ok {
				v2, err2 := redis.ReceiveWithTimeout(c.rc, c.stall)
				if !answered(err2) {
					c.fail(call, err2)
					return
				}
				p.ReplyPair(v, err, v2, err2)
				continue
			}
		}
		call.Reply(v, err)
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
