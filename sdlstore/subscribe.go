package sdlstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Notifications.
//
// Each instance has at most one subscriber connection, shared by all the
// channels of all the namespaces on it. A goroutine per instance reads it
// and queues each message; callbacks run elsewhere (the event listener
// goroutine, or the caller of HandleEvents), so a slow callback never stalls
// the connection. The queue is unbounded.
//
// When the connection breaks (instance restart, failover, network fault, or
// no answer to the health-check PING for two intervals) the subscriber dials
// again, with a growing pause while that fails, and resubscribes every
// channel. Redis pub/sub delivers at most once: events published while the
// subscriber was disconnected are lost and are not replayed. Applications
// that must not miss a change should re-read the data they watch after an
// outage (WithLogger reports reconnections).

// errHealthCheck is the cause of a subscriber reconnection after PINGs went
// unanswered.
var errHealthCheck = errors.New("sdlstore: subscriber connection did not answer the health check")

// event is one received notification, waiting for delivery.
type event struct {
	sub     *subscriber
	full    string // "{ns},channel"
	channel string
	events  []string
}

// eventQueue holds received events and the delivery mode.
type eventQueue struct {
	mu       sync.Mutex
	items    []event
	head     int
	polling  bool // events wait for HandleEvents
	explicit bool // StartEventListener was called
	running  bool // the listener goroutine was started
	notify   chan struct{}
}

func (q *eventQueue) init(polling bool) {
	q.polling = polling
	q.notify = make(chan struct{}, 1)
}

func (q *eventQueue) push(e event) {
	q.mu.Lock()
	q.items = append(q.items, e)
	q.mu.Unlock()
	q.wake()
}

func (q *eventQueue) pop() (event, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.items) {
		return event{}, false
	}
	e := q.items[q.head]
	q.items[q.head] = event{}
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return e, true
}

func (q *eventQueue) wake() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *eventQueue) isPolling() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.polling
}

// SubscribeChannel subscribes cb to channels of namespace ns and returns
// once Redis has confirmed every subscription, so that any later publish
// reaches cb. cb gets the channel name without namespace and the events of
// one publish, split on "___". Subscribing a channel again replaces its
// callback. If the instance cannot be reached (or ctx ends first) it returns
// ErrNotConnected and the channels it added are dropped again.
//
// Callbacks run one at a time, in arrival order, in the event listener
// goroutine (the default) or in HandleEvents (WithEventPolling). A callback
// must not call Close.
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
	sb, err := s.subscriber(s.inst(ns))
	if err != nil {
		return err
	}
	if !s.ev.isPolling() {
		s.ensureListener()
	}
	id, w, conn := sb.register(fulls, cb)
	if w == nil {
		return nil
	}
	if conn != nil {
		sb.send(conn, "SUBSCRIBE", w.channels()...) // a failure breaks the connection and fails w
	}
	select {
	case err = <-w.done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil {
		return nil
	}
	sb.rollback(id, w, fulls)
	return backendErr("subscribe", err)
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
	in := s.inst(ns)
	s.subMu.Lock()
	sb := in.sub
	s.subMu.Unlock()
	if sb == nil {
		return nil
	}
	if conn, gone := sb.unregister(fulls); conn != nil && len(gone) > 0 {
		sb.send(conn, "UNSUBSCRIBE", gone...)
	}
	return nil
}

// StartEventListener switches to background delivery: from now on every
// callback runs in the Store's listener goroutine, and HandleEvents is
// rejected. It is the default mode already (unless WithEventPolling), so it
// only matters after polling; as in ricsdl, a second call is an
// ErrRejectedByBackend.
func (s *Store) StartEventListener() error {
	if err := s.usable(); err != nil {
		return err
	}
	s.ev.mu.Lock()
	if s.ev.explicit {
		s.ev.mu.Unlock()
		return rejected("event listener already started")
	}
	s.ev.explicit, s.ev.polling = true, false
	s.ev.mu.Unlock()
	s.ensureListener()
	return nil
}

// HandleEvents delivers at most one queued notification in polling mode
// (WithEventPolling): it runs the channel's callback in the caller's
// goroutine and returns the channel and events with ok true, or returns
// ok false at once when nothing is queued. It never waits for the network.
// Without polling mode, or after StartEventListener, it is an
// ErrRejectedByBackend, as in ricsdl.
func (s *Store) HandleEvents(ctx context.Context) (channel string, events []string, ok bool, err error) {
	if err := s.usable(); err != nil {
		return "", nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return "", nil, false, backendErr("handle events", err)
	}
	if !s.ev.isPolling() {
		return "", nil, false, rejected("events are delivered by the event listener; HandleEvents needs WithEventPolling")
	}
	for {
		e, ok := s.ev.pop()
		if !ok {
			return "", nil, false, nil
		}
		if cb := e.sub.callback(e.full); cb != nil {
			cb(e.channel, e.events)
			return e.channel, e.events, true, nil
		}
	}
}

// ensureListener starts the listener goroutine once.
func (s *Store) ensureListener() {
	s.ev.mu.Lock()
	defer s.ev.mu.Unlock()
	if s.ev.running {
		return
	}
	if s.spawn(s.listen) {
		s.ev.running = true
	}
}

// listen delivers queued events until Close.
func (s *Store) listen() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.ev.notify:
		}
		for s.ctx.Err() == nil {
			if s.ev.isPolling() {
				break
			}
			e, ok := s.ev.pop()
			if !ok {
				break
			}
			if cb := e.sub.callback(e.full); cb != nil {
				cb(e.channel, e.events)
			}
		}
	}
}

// subscriber is the pub/sub connection of one instance.
type subscriber struct {
	s    *Store
	in   *instance
	kick chan struct{} // cut a reconnection pause short

	writeMu sync.Mutex // one writer at a time on conn (the reader runs alongside)

	mu      sync.Mutex
	regs    map[string]*registration // by Redis channel
	conn    redis.Conn               // nil while disconnected
	waiters map[*subWaiter]struct{}
	nextID  uint64
}

// registration is one subscribed channel.
type registration struct {
	cb    func(channel string, events []string)
	acked bool   // confirmed on the current connection
	owner uint64 // the SubscribeChannel call that added it
}

// subWaiter is a SubscribeChannel call waiting for confirmations.
type subWaiter struct {
	need map[string]struct{}
	done chan error // buffered; nil when confirmed
}

func (w *subWaiter) channels() []any {
	out := make([]any, 0, len(w.need))
	for ch := range w.need {
		out = append(out, ch)
	}
	return out
}

// subscriber returns the instance's subscriber, starting it on first use.
func (s *Store) subscriber(in *instance) (*subscriber, error) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	if in.sub != nil {
		return in.sub, nil
	}
	sb := &subscriber{
		s:       s,
		in:      in,
		kick:    make(chan struct{}, 1),
		regs:    make(map[string]*registration),
		waiters: make(map[*subWaiter]struct{}),
	}
	if !s.spawn(sb.run) {
		return nil, ErrClosed
	}
	in.sub = sb
	return sb, nil
}

// register adds or updates channels and returns a waiter for those not yet
// confirmed (nil when all are), and the live connection, if any, on which
// to subscribe them.
func (sb *subscriber) register(fulls []string, cb func(string, []string)) (uint64, *subWaiter, redis.Conn) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.nextID++
	id := sb.nextID
	w := &subWaiter{need: make(map[string]struct{}), done: make(chan error, 1)}
	for _, full := range fulls {
		r := sb.regs[full]
		if r == nil {
			r = &registration{owner: id}
			sb.regs[full] = r
		}
		r.cb = cb
		if !r.acked {
			w.need[full] = struct{}{}
		}
	}
	if len(w.need) == 0 {
		return id, nil, nil
	}
	sb.waiters[w] = struct{}{}
	select {
	case sb.kick <- struct{}{}:
	default:
	}
	return id, w, sb.conn
}

// rollback drops the channels that call id added, after its failure.
func (sb *subscriber) rollback(id uint64, w *subWaiter, fulls []string) {
	sb.mu.Lock()
	delete(sb.waiters, w)
	var gone []any
	for _, full := range fulls {
		if r := sb.regs[full]; r != nil && r.owner == id {
			delete(sb.regs, full)
			gone = append(gone, full)
		}
	}
	conn := sb.conn
	sb.mu.Unlock()
	if conn != nil && len(gone) > 0 {
		sb.send(conn, "UNSUBSCRIBE", gone...)
	}
}

// unregister drops channels; it returns the live connection and the
// channels that were subscribed.
func (sb *subscriber) unregister(fulls []string) (redis.Conn, []any) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	var gone []any
	for _, full := range fulls {
		if _, ok := sb.regs[full]; ok {
			delete(sb.regs, full)
			gone = append(gone, full)
		}
	}
	return sb.conn, gone
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

// send writes one command on the subscriber connection. An error breaks
// the connection, which the reader then notices.
func (sb *subscriber) send(conn redis.Conn, cmd string, args ...any) error {
	sb.writeMu.Lock()
	defer sb.writeMu.Unlock()
	if err := conn.Send(cmd, args...); err != nil {
		return err
	}
	return conn.Flush()
}

// ack records Redis's confirmation of a subscription.
func (sb *subscriber) ack(full string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if r := sb.regs[full]; r != nil {
		r.acked = true
	}
	for w := range sb.waiters {
		delete(w.need, full)
		if len(w.need) == 0 {
			w.done <- nil
			delete(sb.waiters, w)
		}
	}
}

// fail ends every waiting SubscribeChannel with err.
func (sb *subscriber) fail(err error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.failLocked(err)
}

func (sb *subscriber) failLocked(err error) {
	for w := range sb.waiters {
		w.done <- err
		delete(sb.waiters, w)
	}
}

// run keeps the instance's subscriber connection up until Close.
func (sb *subscriber) run() {
	defer sb.fail(ErrClosed)
	base := sb.s.cfg.reconnectDelay
	delay := base
	for {
		conn, err := sb.connect()
		if err == nil {
			if delay > base {
				sb.log("sdlstore: subscriber reconnected")
			}
			delay = base
			err = sb.serve(conn)
			sb.detach(err)
			conn.Close()
			if sb.s.ctx.Err() != nil {
				return
			}
			sb.log("sdlstore: subscriber connection lost", "err", err)
			sb.rediscover(err)
			continue // dial again at once
		}
		if sb.s.ctx.Err() != nil {
			return
		}
		sb.fail(err)
		sb.log("sdlstore: subscriber cannot connect", "err", err, "retry_in", delay)
		sb.rediscover(err)
		if !sb.pause(delay) {
			return
		}
		delay = min(2*delay, max(MaxReconnectDelay, base))
	}
}

func (sb *subscriber) log(msg string, args ...any) {
	if l := sb.s.cfg.logger; l != nil {
		l.Warn(msg, append([]any{"instance", sb.in.index}, args...)...)
	}
}

func (sb *subscriber) rediscover(err error) {
	if r, ok := sb.in.pool.(rediscoverer); ok && isConnectionFault(err) {
		r.rediscover()
	}
}

// pause waits d, or less when a new subscription arrives; false on Close.
func (sb *subscriber) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-sb.s.ctx.Done():
		return false
	case <-t.C:
	case <-sb.kick:
	}
	return true
}

// connect gets a working connection and subscribes every registered
// channel on it.
func (sb *subscriber) connect() (redis.Conn, error) {
	ctx, cancel := context.WithTimeout(sb.s.ctx, 2*sb.s.cfg.healthInterval)
	defer cancel()
	var conn redis.Conn
	for try := 0; ; try++ {
		c, err := sb.in.pool.GetContext(ctx)
		if err != nil {
			return nil, err
		}
		if _, err = redis.DoContext(c, ctx, "PING"); err == nil {
			conn = c
			break
		}
		c.Close()
		if try == 8 || ctx.Err() != nil { // pooled connections from before a restart fail once each
			return nil, err
		}
	}
	sb.mu.Lock()
	sb.conn = conn
	all := make([]any, 0, len(sb.regs))
	for full, r := range sb.regs {
		r.acked = false
		all = append(all, full)
	}
	sb.mu.Unlock()
	if len(all) > 0 {
		if err := sb.send(conn, "SUBSCRIBE", all...); err != nil {
			sb.detach(err)
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

// detach forgets the connection after it broke.
func (sb *subscriber) detach(err error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.conn = nil
	for _, r := range sb.regs {
		r.acked = false
	}
	sb.failLocked(err)
}

// serve reads conn in a child goroutine and PINGs it every health-check
// interval; it returns when the connection breaks, stops answering, or the
// Store closes, always after the reader has exited.
func (sb *subscriber) serve(conn redis.Conn) error {
	ctx, cancel := context.WithCancel(sb.s.ctx)
	defer cancel()
	var lastSeen atomic.Int64
	lastSeen.Store(time.Now().UnixNano())
	readErr := make(chan error, 1)
	go func() { readErr <- sb.read(ctx, conn, &lastSeen) }()
	interval := sb.s.cfg.healthInterval
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case err := <-readErr:
			return err
		case <-t.C:
			if time.Since(time.Unix(0, lastSeen.Load())) > 2*interval {
				cancel()
				<-readErr
				return errHealthCheck
			}
			if err := sb.send(conn, "PING"); err != nil {
				cancel()
				<-readErr
				return err
			}
		}
	}
}

// read receives from conn until it fails or ctx ends, queueing messages
// and recording confirmations.
func (sb *subscriber) read(ctx context.Context, conn redis.Conn, lastSeen *atomic.Int64) error {
	psc := redis.PubSubConn{Conn: conn}
	for {
		switch v := psc.ReceiveContext(ctx).(type) {
		case redis.Message:
			lastSeen.Store(time.Now().UnixNano())
			if ch, ok := stripNamespace(v.Channel); ok {
				sb.s.ev.push(event{sub: sb, full: v.Channel, channel: ch, events: splitEvents(string(v.Data))})
			}
		case redis.Subscription:
			lastSeen.Store(time.Now().UnixNano())
			if v.Kind == "subscribe" {
				sb.ack(v.Channel)
			}
		case redis.Pong:
			lastSeen.Store(time.Now().UnixNano())
		case error:
			return v
		}
	}
}
