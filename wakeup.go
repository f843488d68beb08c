package redlock

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pubsub"
)

// The wake-up subscribers' health check and redial pauses.
const (
	subscriberHealth     = time.Second
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
// its fallback pause. The subscriber of each node (internal/pubsub) checks
// its connection's health, dials again when it fails and resubscribes; as
// releases published meanwhile were lost, the first waiter of every name
// then retries at once.
type waker struct {
	configs []pubsub.Config // one per node that can dial
	tags    []*clusterNode  // the cluster node of each config; nil for an independent node

	mu      sync.Mutex
	started bool
	closed  bool
	subs    []wakeSub
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

// newWaker returns a waker over the nodes that can open a connection of
// their own: PoolNodes whose pool dials (*redis.Pool) and PubSubNodes; nil
// when none can. Its subscribers (one per such node, goroutines of the
// owner) start with the first wait, so that a factory whose Acquire calls
// never block runs none.
func newWaker(nodes []Node, nodeTimeout time.Duration, o *owner, logger *slog.Logger) *waker {
	w := &waker{names: map[string]*interest{}}
	for _, nd := range nodes {
		var cfg pubsub.Config
		cn, _ := nd.(*clusterNode)
		switch n := nd.(type) {
		case poolNode:
			cfg.Dial = dialerOf(n.p)
		case PubSubNode:
			cfg.Open = openerOf(n)
		}
		if cp, ok := clusterPoolOf(nd); ok {
			cfg.Dial, cfg.Open = cp.dial, nil
		} else if cn != nil && !cn.canPubSub() {
			cfg.Open = nil // its client cannot subscribe: its waiters poll
		}
		if cfg.Dial == nil && cfg.Open == nil {
			continue
		}
		onMessage, onConfirm := w.notify, w.confirm
		if cn != nil { // a cluster node's channels carry its hash tag
			onMessage = func(ch string, token []byte) { w.notify(untaggedChannel(ch), token) }
			onConfirm = func(ch string) { w.confirm(untaggedChannel(ch)) }
		}
		w.tags = append(w.tags, cn)
		w.configs = append(w.configs, pubsub.Config{
			Dial:           cfg.Dial,
			Open:           cfg.Open,
			Spawn:          o.spawn,
			OnMessage:      onMessage,
			OnConfirm:      onConfirm,
			OnConnect:      w.reconnected,
			HealthInterval: subscriberHealth,
			DialTimeout:    max(nodeTimeout, minStall),
			MinBackoff:     minSubscriberBackoff,
			MaxBackoff:     maxSubscriberBackoff,
			Logger:         logger,
		})
	}
	if len(w.configs) == 0 {
		return nil
	}
	return w
}

// start makes the subscribers on the first wait; w.mu is held. A
// subscriber the owner refuses (it is closing) is left out: its waiters
// poll.
func (w *waker) start() {
	if w.started || w.closed {
		return
	}
	w.started = true
	for i, cfg := range w.configs {
		if sub, err := pubsub.New(cfg); err == nil {
			w.subs = append(w.subs, wakeSub{sub, w.tags[i]})
		}
	}
}

// wakeSub is one node's subscriber, with the cluster node whose hash tag
// its channels carry (nil for an independent node).
type wakeSub struct {
	*pubsub.Subscriber
	cluster *clusterNode
}

// channel is the release channel of name on the subscriber's node: a
// cluster node's release publishes on its tagged key (release.lua).
func (s wakeSub) channel(name string) string {
	if s.cluster != nil {
		return releaseChannelPrefix + s.cluster.tag() + name
	}
	return releaseChannelPrefix + name
}

// untaggedChannel is a cluster node's release channel without its tag.
func untaggedChannel(ch string) string {
	if name, ok := strings.CutPrefix(ch, releaseChannelPrefix); ok {
		return releaseChannelPrefix + untagged(name)
	}
	return ch
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
// the function that removes it. Subscription changes are made while w.mu
// is held, in the order of the map's changes; the subscribers write them in
// that order (they do no I/O here), so a SUBSCRIBE can never be overtaken
// by the UNSUBSCRIBE of an earlier waiter.
func (w *waker) watch(name string) (*waiter, *interest, func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.start()
	in := w.names[name]
	if in == nil { // a new subscription: ready closes when a node confirms it
		in = &interest{ready: make(chan struct{})}
		w.names[name] = in
		for _, s := range w.subs {
			_ = s.Subscribe(s.channel(name)) // fails only once closed
			if s.Confirmed(s.channel(name)) {
				// Put back before its UNSUBSCRIBE was written: the node
				// never stopped delivering, and will not confirm again.
				in.readyOnce.Do(func() { close(in.ready) })
			}
		}
	}
	wt := &waiter{wake: make(chan struct{}, 1)}
	if w.closed {
		wt.poke()
	}
	in.queue = append(in.queue, wt)
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
			_ = s.Unsubscribe(s.channel(name))
		}
	}
}

// notify wakes the waiters of a released name.
func (w *waker) notify(channel string, token []byte) {
	if name, ok := strings.CutPrefix(channel, releaseChannelPrefix); ok {
		w.released(name, string(token))
	}
}

// reconnected wakes the first waiter of every name after a subscriber came
// back: a release published while it was away was not heard.
func (w *waker) reconnected(again bool) {
	if !again {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, in := range w.names {
		if len(in.queue) > 0 {
			in.queue[0].poke()
		}
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

// close wakes every waiter, so that blocked Acquire calls see the factory
// closed, and stops the subscribers, waiting for their goroutines. It is
// called without w.mu: a subscriber's callbacks take it.
func (w *waker) close() {
	w.mu.Lock()
	w.closed = true
	for _, in := range w.names {
		for _, wt := range in.queue {
			wt.poke()
		}
	}
	subs := w.subs
	w.mu.Unlock()
	for _, s := range subs {
		s.Close()
	}
}
