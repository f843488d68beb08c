package redlock

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// subscriberBackoff bounds the pause between two dials of a lost subscriber
// connection.
const (
	minSubscriberBackoff = 10 * time.Millisecond
	maxSubscriberBackoff = time.Second
)

// waker lets the blocked Acquire calls of a factory sleep until a release of
// their lock is announced, instead of polling. Release publishes on the
// lock's channel on every node it deletes the key from; the waker holds one
// subscriber connection per node, subscribed to the channels of the names
// that have waiters, and wakes every waiter of a name when a message comes.
// Notifications are a hint: a waiter that hears nothing still retries after
// its fallback pause.
type waker struct {
	subs []*subscriber
	bg   *sync.WaitGroup
	quit chan struct{}

	mu      sync.Mutex
	started bool
	closed  bool
	names   map[string]*interest
}

// interest is the waiters of one lock name.
type interest struct {
	refs      int
	signal    chan struct{} // closed at the next release, then replaced
	ready     chan struct{} // closed once a node confirmed the subscription
	readyOnce sync.Once
}

// subscriber is the pub/sub connection to one node, redialled when lost.
type subscriber struct {
	w    *waker
	dial func(ctx context.Context) (redis.Conn, error)
	wait time.Duration // dial timeout

	mu   sync.Mutex // serialises writes to conn and guards it
	conn redis.Conn
}

// newWaker returns a waker over the nodes whose pools can dial a dedicated
// connection (*redis.Pool), or nil when none can.
func newWaker(nodes []*node, nodeTimeout time.Duration, bg *sync.WaitGroup) *waker {
	w := &waker{bg: bg, quit: make(chan struct{}), names: map[string]*interest{}}
	for _, n := range nodes {
		if dial := dialerOf(n.pool); dial != nil {
			w.subs = append(w.subs, &subscriber{w: w, dial: dial, wait: max(nodeTimeout, minStall)})
		}
	}
	if len(w.subs) == 0 {
		return nil
	}
	return w
}

// dialerOf returns a function that opens a connection of its own to the
// pool's node, outside the pool, so that it can be closed at any time.
func dialerOf(p Pool) func(ctx context.Context) (redis.Conn, error) {
	rp, ok := p.(*redis.Pool)
	switch {
	case !ok:
		return nil
	case rp.DialContext != nil:
		return rp.DialContext
	case rp.Dial != nil:
		return func(context.Context) (redis.Conn, error) { return rp.Dial() }
	}
	return nil
}

// watch registers a waiter of name and returns its interest and the
// function that unregisters it.
func (w *waker) watch(name string) (*interest, func()) {
	w.mu.Lock()
	in := w.names[name]
	fresh := in == nil
	if fresh {
		in = &interest{signal: make(chan struct{}), ready: make(chan struct{})}
		w.names[name] = in
	}
	in.refs++
	if !w.started && !w.closed {
		w.started = true
		for _, s := range w.subs {
			w.bg.Add(1)
			go func() {
				defer w.bg.Done()
				s.loop()
			}()
		}
	}
	w.mu.Unlock()
	if fresh {
		for _, s := range w.subs {
			s.send("SUBSCRIBE", releaseChannelPrefix+name)
		}
	}
	return in, func() { w.unwatch(name, in) }
}

func (w *waker) unwatch(name string, in *interest) {
	w.mu.Lock()
	in.refs--
	last := in.refs == 0 && w.names[name] == in
	if last {
		delete(w.names, name)
	}
	w.mu.Unlock()
	if last {
		for _, s := range w.subs {
			s.send("UNSUBSCRIBE", releaseChannelPrefix+name)
		}
	}
}

// next returns the channel closed by the next release of in's name, or a
// closed one once the waker has closed.
func (w *waker) next(in *interest) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return closedDone
	}
	return in.signal
}

// notify wakes the waiters of a released name.
func (w *waker) notify(channel string) {
	name, ok := strings.CutPrefix(channel, releaseChannelPrefix)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if in := w.names[name]; in != nil {
		close(in.signal)
		in.signal = make(chan struct{})
	}
}

// confirm records that a node subscribed to a name's channel.
func (w *waker) confirm(channel string) {
	name, _ := strings.CutPrefix(channel, releaseChannelPrefix)
	w.mu.Lock()
	in := w.names[name]
	w.mu.Unlock()
	if in != nil {
		in.readyOnce.Do(func() { close(in.ready) })
	}
}

// channels lists the channels that must be subscribed.
func (w *waker) channels() []any {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]any, 0, len(w.names))
	for name := range w.names {
		out = append(out, releaseChannelPrefix+name)
	}
	return out
}

// close stops every subscriber and wakes every waiter, so that blocked
// Acquire calls see the factory closed; the caller waits with bg.
func (w *waker) close() {
	w.mu.Lock()
	w.closed = true
	for _, in := range w.names {
		close(in.signal)
		in.signal = closedDone
	}
	w.mu.Unlock()
	close(w.quit)
	for _, s := range w.subs {
		s.mu.Lock()
		if s.conn != nil {
			s.conn.Close() // unblocks the reader
		}
		s.mu.Unlock()
	}
}

// send writes one command on the current connection, if any; a command lost
// with a connection is repeated by the resubscription after the redial.
func (s *subscriber) send(cmd string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return
	}
	if s.conn.Send(cmd, args...) == nil {
		s.conn.Flush()
	}
}

// loop keeps one subscribed connection to the node until the waker closes.
func (s *subscriber) loop() {
	backoff := minSubscriberBackoff
	for {
		ctx, cancel := context.WithTimeout(context.Background(), s.wait)
		c, err := s.dial(ctx)
		cancel()
		if err != nil {
			select {
			case <-s.w.quit:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, maxSubscriberBackoff)
			continue
		}
		backoff = minSubscriberBackoff
		if !s.attach(c) {
			c.Close()
			return
		}
		s.read(c)
		s.mu.Lock()
		s.conn = nil
		s.mu.Unlock()
		c.Close()
	}
}

// attach makes c the connection and subscribes it to every watched channel.
// It reports false when the waker has closed.
func (s *subscriber) attach(c redis.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.w.quit:
		return false
	default:
	}
	s.conn = c
	if chans := s.w.channels(); len(chans) > 0 {
		if c.Send("SUBSCRIBE", chans...) == nil {
			c.Flush()
		}
	}
	return true
}

// read dispatches messages until the connection fails or is closed.
func (s *subscriber) read(c redis.Conn) {
	psc := redis.PubSubConn{Conn: c}
	for {
		switch v := psc.Receive().(type) {
		case redis.Message:
			s.w.notify(v.Channel)
		case redis.Subscription:
			if v.Kind == "subscribe" {
				s.w.confirm(v.Channel)
			}
		case error:
			return
		}
	}
}
