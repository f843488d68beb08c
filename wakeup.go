package redlock

import (
	"context"
	"slices"
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
// their lock is announced, instead of polling. Release publishes the
// released token on the lock's channel on every node it deletes the key
// from; the waker holds one subscriber connection per node, subscribed to
// the channels of the names that have waiters. The local waiters of a name
// queue in arrival order and each release wakes the first of them only (the
// copies of one release from several nodes count once): it retries at once
// while the others sleep on, so a handoff costs one attempt rather than a
// stampede, and waiters are served roughly first come, first served.
// Notifications are a hint: a waiter that hears nothing still retries after
// its fallback pause.
type waker struct {
	subs []*subscriber
	o    *owner
	quit chan struct{}

	mu      sync.Mutex
	started bool
	closed  bool
	names   map[string]*interest
}

// interest is the waiters of one lock name.
type interest struct {
	queue     []*waiter     // in arrival order; the first is woken
	recent    [4]string     // the releases last announced, to count each once
	lastAt    time.Time     // when the last release was announced
	ready     chan struct{} // closed once a node confirmed the subscription
	readyOnce sync.Once
}

// waiter is one blocked Acquire. wake holds at most one pending wake-up.
type waiter struct {
	wake chan struct{}
}

// poke leaves a wake-up for the waiter unless one is pending.
func (wt *waiter) poke() {
	select {
	case wt.wake <- struct{}{}:
	default:
	}
}

// subscriber is the pub/sub connection to one node, redialled when lost.
type subscriber struct {
	w    *waker
	dial func(ctx context.Context) (redis.Conn, error)
	wait time.Duration // dial timeout

	mu   sync.Mutex // guards conn; taken after the waker's mu, never before
	conn redis.Conn
}

// newWaker returns a waker over the nodes whose pools can dial a dedicated
// connection (*redis.Pool), or nil when none can.
func newWaker(nodes []*node, nodeTimeout time.Duration, o *owner) *waker {
	w := &waker{o: o, quit: make(chan struct{}), names: map[string]*interest{}}
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

// watch queues a waiter of name and returns it, the name's interest, and
// the function that removes it. Subscription changes are written while w.mu
// is held, so that they reach each node in the order of the map's changes: a
// SUBSCRIBE can never be overtaken by the UNSUBSCRIBE of an earlier waiter.
func (w *waker) watch(name string) (*waiter, *interest, func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	in := w.names[name]
	if in == nil { // a new subscription: ready closes when a node confirms it
		in = &interest{ready: make(chan struct{})}
		w.names[name] = in
		for _, s := range w.subs {
			s.send("SUBSCRIBE", releaseChannelPrefix+name)
		}
	}
	wt := &waiter{wake: make(chan struct{}, 1)}
	if w.closed {
		wt.poke()
	}
	in.queue = append(in.queue, wt)
	if !w.started && !w.closed {
		w.started = true
		for _, s := range w.subs {
			w.o.spawn(s.loop)
		}
	}
	return wt, in, func() { w.unwatch(name, in, wt) }
}

// queued reports whether name has local waiters.
func (w *waker) queued(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.names[name] != nil
}

// unwatch removes a waiter. A first waiter that leaves with a wake-up it did
// not use (its Acquire ended otherwise) passes it to the next.
func (w *waker) unwatch(name string, in *interest, wt *waiter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.Index(in.queue, wt)
	if i < 0 {
		return
	}
	in.queue = slices.Delete(in.queue, i, i+1)
	select {
	case <-wt.wake:
		if i == 0 && len(in.queue) > 0 {
			in.queue[0].poke()
		}
	default:
	}
	if len(in.queue) == 0 && w.names[name] == in {
		delete(w.names, name)
		for _, s := range w.subs {
			s.send("UNSUBSCRIBE", releaseChannelPrefix+name)
		}
	}
}

// notify wakes the waiters of a released name.
func (w *waker) notify(channel, token string) {
	if name, ok := strings.CutPrefix(channel, releaseChannelPrefix); ok {
		w.released(name, token)
	}
}

// released wakes the first local waiter of name for the release of token;
// the same release heard again (from another node, or from Redis after the
// releasing lock of this factory announced it) counts once.
func (w *waker) released(name, token string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	in := w.names[name]
	if in == nil || len(in.queue) == 0 || slices.Contains(in.recent[:], token) {
		return
	}
	copy(in.recent[1:], in.recent[:])
	in.recent[0] = token
	in.lastAt = time.Now()
	in.queue[0].poke()
}

// turnPending reports whether wt should keep waiting after its fallback
// pause instead of trying out of turn: it is not first in the queue, and the
// queue moved within the last within (its holders announce their releases,
// so the first waiter will be woken).
func (w *waker) turnPending(in *interest, wt *waiter, within time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.closed && len(in.queue) > 0 && in.queue[0] != wt && time.Since(in.lastAt) < within
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

// close stops every subscriber and wakes every waiter, so that blocked
// Acquire calls see the factory closed; the caller waits with bg.
func (w *waker) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for _, in := range w.names {
		for _, wt := range in.queue {
			wt.poke()
		}
	}
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

// attach makes c the connection and subscribes it to every watched channel,
// under the waker's lock like every other subscription change. It reports
// false when the waker has closed.
func (s *subscriber) attach(c redis.Conn) bool {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if s.w.closed {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conn = c
	chans := make([]any, 0, len(s.w.names))
	for name := range s.w.names {
		chans = append(chans, releaseChannelPrefix+name)
	}
	if len(chans) > 0 && c.Send("SUBSCRIBE", chans...) == nil {
		c.Flush()
	}
	return true
}

// read dispatches messages until the connection fails or is closed.
func (s *subscriber) read(c redis.Conn) {
	psc := redis.PubSubConn{Conn: c}
	for {
		switch v := psc.Receive().(type) {
		case redis.Message:
			s.w.notify(v.Channel, string(v.Data))
		case redis.Subscription:
			if v.Kind == "subscribe" {
				s.w.confirm(v.Channel)
			}
		case error:
			return
		}
	}
}
