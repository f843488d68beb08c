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
		if err := c.rc.Send(name, args...); err != nil {
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
		if _, isReply := err.(redis.Error); err == nil || isReply {
			call.Reply(v, err)
			continue
		}
		call.Reply(nil, err)
		close(c.dead)
		for call := range c.inflight {
			call.Reply(nil, err)
		}
		return
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
