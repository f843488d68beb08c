package sdlstore

import (
	"context"
	"errors"
	"sync"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/pubsub"
)

// Notifications.
//
// Each instance has at most one subscriber connection, shared by all the
// channels of all the namespaces on it: a pubsub.Subscriber, which
// health-checks it with PING, dials again with a growing pause when it
// breaks or stops answering, and resubscribes every channel. Its reader
// queues each message for delivery (events.go). The connection comes
// from the instance's pool (Config.Dial) or, in a Store made by
// NewFromNodes, from the node's PubSub (Config.Open, nodes.go): the same
// Subscriber and the same delivery either way.
//
// Redis pub/sub delivers at most once: events published while the
// subscriber was disconnected are lost and are not replayed. Applications
// that must not miss a change should re-read the data they watch after an
// outage (WithLogger reports reconnections).

// SubscribeChannel subscribes cb to channels of namespace ns and returns
// once Redis has confirmed every subscription, so that any later publish
// reaches cb. cb gets the channel name without namespace and the events of
// one publish, split on "___". Subscribing a channel again replaces its
// callback. If the instance cannot be reached (or ctx ends first) it returns
// ErrNotConnected and the channels it added are dropped again.
//
// Callbacks run one at a time, in arrival order, in the event listener
// goroutine (the default) or in HandleEvents (WithEventPolling). A callback
// must not call Close. Events that find the event queue full are dropped
// (see WithEventQueue).
//
// On a Store made by NewFromNodes the subscriber connection comes from
// the instance's node, which must be a redlock.PubSubNode (the nodes of
// the goredis and rueidis modules are, but for a go-redis Ring): for a
// namespace on any other node SubscribeChannel returns
// ErrSubscribeUnsupported.
func (s *Store) SubscribeChannel(ctx context.Context, ns string, cb func(channel string, events []string), channels ...string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := checkNamespace(ns); err != nil {
		return err
	}
	if cb == nil {
		return invalidArg("callback is nil")
	}
	fulls, err := channelKeys(ns, channels)
	if err != nil {
		return err
	}
	if !canSubscribe(s.inst(ns)) {
		return ErrSubscribeUnsupported
	}
	sb, err := s.subscriber(s.inst(ns))
	if err != nil {
		return err
	}
	if !s.ev.isPolling() {
		s.ensureListener()
	}
	id, err := sb.add(fulls, cb)
	if err == nil {
		err = sb.ps.WaitConfirmed(ctx, fulls...)
	}
	if err == nil {
		return nil
	}
	sb.rollback(id, fulls)
	return subscribeErr("subscribe", err)
}

// subscribeErr maps an error of the subscriber.
func subscribeErr(op string, err error) error {
	if errors.Is(err, pubsub.ErrClosed) {
		return ErrClosed
	}
	return backendErr(op, err)
}

// channelKeys validates channel names and returns their Redis channels.
func channelKeys(ns string, channels []string) ([]string, error) {
	if len(channels) == 0 {
		return nil, invalidArg("no channels given")
	}
	out := make([]string, len(channels))
	for i, ch := range channels {
		if err := checkName("channel", ch); err != nil {
			return nil, err
		}
		out[i] = nsKey(ns, ch)
	}
	return out, nil
}

// UnsubscribeChannel stops delivering channels of namespace ns: no callback
// for them starts after it returns (one already running may finish), and
// events of them still queued are dropped. Channels not subscribed are
// ignored. The UNSUBSCRIBE itself is sent without waiting for its answer.
func (s *Store) UnsubscribeChannel(ctx context.Context, ns string, channels ...string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := checkNamespace(ns); err != nil {
		return err
	}
	fulls, err := channelKeys(ns, channels)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return backendErr("unsubscribe", err)
	}
	s.subMu.Lock()
	sb := s.inst(ns).sub
	s.subMu.Unlock()
	if sb == nil {
		return nil
	}
	return sb.remove(fulls)
}

// subscriber is the notifications of one instance: a callback per Redis
// channel, over the instance's pubsub.Subscriber.
type subscriber struct {
	ps *pubsub.Subscriber

	// mu keeps regs and the Subscriber's set changing together, in one
	// order; the Subscriber does no I/O under it.
	mu     sync.Mutex
	regs   map[string]*registration // by Redis channel
	nextID uint64
}

// registration is one subscribed channel.
type registration struct {
	cb    func(channel string, events []string)
	owner uint64 // the SubscribeChannel call that added it
}

// subscriber returns the instance's subscriber, starting it on first use.
func (s *Store) subscriber(in *instance) (*subscriber, error) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	if in.sub != nil {
		return in.sub, nil
	}
	sb := &subscriber{regs: make(map[string]*registration)}
	cfg := pubsub.Config{
		Spawn:     s.spawn,
		OnMessage: func(ch string, data []byte) { s.received(sb, ch, data) },
		OnConnect: func(reconnect bool) { s.observeSubscriber(in, true, reconnect, nil) },
		OnDisconnect: func(err error) {
			s.rediscover(in, err)
			s.observeSubscriber(in, false, false, err)
		},
		HealthInterval: s.cfg.healthInterval,
		DialTimeout:    2 * s.cfg.healthInterval,
		MinBackoff:     s.cfg.reconnectDelay,
		MaxBackoff:     max(MaxReconnectDelay, s.cfg.reconnectDelay),
	}
	if n, ok := in.node.(redlock.PubSubNode); ok {
		// A redlock.PubSubConn is a pubsub.Conn (their replies are one type).
		cfg.Open = func(ctx context.Context) (pubsub.Conn, error) { return n.PubSub(ctx) }
	} else {
		cfg.Dial = s.subscriberDial(in)
	}
	if l := s.cfg.logger; l != nil {
		cfg.Logger = l.With("instance", in.index)
	}
	ps, err := pubsub.New(cfg)
	if err != nil {
		return nil, subscribeErr("subscribe", err)
	}
	sb.ps = ps
	in.sub = sb
	return sb, nil
}

// canSubscribe reports whether the instance can have a subscriber: it has
// a pool, or its node is a redlock.PubSubNode.
func canSubscribe(in *instance) bool {
	if in.node == nil {
		return true
	}
	_, ok := in.node.(redlock.PubSubNode)
	return ok
}

// subscriberDial returns how the subscriber of a pool's instance gets a
// connection: from the pool, checked with PING, since pooled connections
// from before a restart fail once each.
func (s *Store) subscriberDial(in *instance) func(ctx context.Context) (redis.Conn, error) {
	return func(ctx context.Context) (redis.Conn, error) {
		for try := 0; ; try++ {
			c, err := in.pool.GetContext(ctx)
			if err != nil {
				return nil, err
			}
			if _, err = redis.DoContext(c, ctx, "PING"); err == nil {
				return c, nil
			}
			c.Close()
			if try == 8 || ctx.Err() != nil {
				return nil, err
			}
		}
	}
}

// received queues one message of the instance's subscriber connection.
func (s *Store) received(sb *subscriber, full string, data []byte) {
	if ch, ok := stripNamespace(full); ok {
		s.ev.push(event{sub: sb, full: full, channel: ch, events: splitEvents(string(data))})
	}
}

// rediscover makes a sentinel pool look for its master again after the
// subscriber connection failed.
func (s *Store) rediscover(in *instance, err error) {
	if r, ok := in.pool.(rediscoverer); ok && isConnectionFault(err) {
		r.rediscover()
	}
}

// add sets the callback of channels and subscribes them; it returns an id
// that marks the channels this call added.
func (sb *subscriber) add(fulls []string, cb func(string, []string)) (uint64, error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.nextID++
	id := sb.nextID
	for _, full := range fulls {
		r := sb.regs[full]
		if r == nil {
			r = &registration{owner: id}
			sb.regs[full] = r
		}
		r.cb = cb
	}
	return id, sb.ps.Subscribe(fulls...)
}

// rollback drops the channels that call id added, after its failure.
func (sb *subscriber) rollback(id uint64, fulls []string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	var gone []string
	for _, full := range fulls {
		if r := sb.regs[full]; r != nil && r.owner == id {
			delete(sb.regs, full)
			gone = append(gone, full)
		}
	}
	_ = sb.ps.Unsubscribe(gone...) // fails only once closed, when nothing is subscribed
}

// remove drops channels.
func (sb *subscriber) remove(fulls []string) error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	var gone []string
	for _, full := range fulls {
		if _, ok := sb.regs[full]; ok {
			delete(sb.regs, full)
			gone = append(gone, full)
		}
	}
	if err := sb.ps.Unsubscribe(gone...); err != nil {
		return subscribeErr("unsubscribe", err)
	}
	return nil
}

// callback returns the callback of a channel; nil once unsubscribed.
func (sb *subscriber) callback(full string) func(string, []string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if r := sb.regs[full]; r != nil {
		return r.cb
	}
	return nil
}
