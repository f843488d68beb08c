package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pubsub"
)

// invalidateChannel is where Redis sends the invalidations of client-side
// caching in RESP2 redirect mode.
const invalidateChannel = "__redis__:invalidate"

// maxCheckBatch bounds the names of one check_many call, as maxExtendBatch
// bounds an extension batch; maxCheckRounds bounds the calls the worker
// has in flight at once, so that a flush of many locks waits about one
// node timeout for a node that does not answer, not one per batch.
const (
	maxCheckBatch  = 1000
	maxCheckRounds = 16
)

// trackDelay is how long a holding is held before the detector first
// checks it, which makes its nodes track its key. Tracking from the
// acquire itself would need a script that writes and then reads the key:
// about 9 µs of server time per node and acquisition against 1.5 µs for
// a bare SET NX PX (Redis 7.0, INFO commandstats), paid by every lock,
// while most are released within milliseconds. A holding lost before its
// first check is found lost by that check, so a loss is noticed at most
// trackDelay and a round trip after it happens.
const trackDelay = 10 * time.Millisecond

// armSlack is how much earlier than due the worker takes an arming with
// others that are due: one wake per stretch of armSlack rather than one
// per acquisition, which under load (tens of thousands a second, most
// released before their check) kept the worker waking for each.
const armSlack = trackDelay / 4

// detector notices within a round trip that a held lock's keys were
// deleted, expired or overwritten on a node (WithLossDetection), through
// Redis client-side caching in RESP2 redirect mode:
//
//   - per node, a subscriber connection of its own (internal/pubsub) is
//     subscribed to __redis__:invalidate; its client id is read at dial;
//   - the node's pipelined command connection runs CLIENT TRACKING on
//     REDIRECT <that id> NOLOOP (at dial in node.setup, and again through
//     the connection whenever the subscriber comes back with a new id), so
//     the node sends the subscriber the name of every key the connection
//     read that another client changes; NOLOOP leaves out the connection's
//     own writes (extensions, releases);
//   - Redis tracks the keys a connection reads, and any write of a key,
//     the connection's own included, ends its tracking: every holding is
//     checked once it has been held trackDelay (arming), and that check
//     reads its key on every node; the extension scripts read the keys
//     after writing them, and so do the scripts of the recipes, which
//     track their keys from the start.
//
// An invalidation of a watched name queues the name; one goroutine of the
// owner (the worker, running while names are queued) checks every queued
// name on every node with one check_many call per node and batch, and
// ends the holdings that fewer than a quorum of nodes still hold with
// ErrLockLost. Invalidations lost while a subscriber or a command
// connection was away are made up for: every watched name is checked again
// once tracking is back, and the check's read tracks the key again.
type lossDetector struct {
	g           *nodeGroup // the nodes and their owner
	obs         *observer  // the factory's: the check rounds' replies and node errors
	nodeTimeout time.Duration
	configs     []pubsub.Config // one per node; nil when a node cannot dial
	// name is the client name of the subscriber connections, unique to the
	// factory: a command connection checks that its redirect target bears
	// it, since a client id names another client after a server restart.
	name string

	mu      sync.Mutex
	started bool
	closed  bool
	subs    []*pubsub.Subscriber
	dialled []int64 // per node: the client id of the subscriber's latest dial
	ids     []int64 // per node: the id of the subscriber that is up; 0 while down
	retrack uint64  // nodes whose command connection must be redirected to ids
	tracked uint64  // nodes whose command connection redirects to ids
	enabled uint64  // nodes on which tracking was ever turned on
	// since: when tracking was last (re)established on a node. A holding
	// whose attempt began before it may have been read untracked, or
	// tracked on a connection that is gone: watch checks it again.
	since time.Duration // on monotonic(), as the holdings' times
	// watched holds, by name, the latest watched holding, and through its
	// watchNext any other live holding of the name (a stale one not yet
	// found lost).
	watched map[string]*holding
	pending map[string]struct{}
	// arming holds the holdings not yet checked, in the order of their due
	// times, in one array: armDue moves the ones left to its front. A queue
	// that resliced its head kept reallocating the array, about 70 B per
	// acquisition under W2's load (BENCHMARKS.md, step 18).
	arming  []arming
	running bool          // the worker
	wake    chan struct{} // (cap 1) work was queued while the worker waits for arming
}

// arming is a holding to check once it is due, trackDelay after it began
// (armSlack earlier at most).
type arming struct {
	name string
	h    *holding
	due  time.Duration // on monotonic()
}

// newLossDetector returns a detector over the nodes whose pools can dial a
// dedicated connection (*redis.Pool), or nil when none can. Its
// subscribers start with the first held lock.
func newLossDetector(g *nodeGroup, nodeTimeout time.Duration, obs *observer, logger *slog.Logger) *lossDetector {
	nodes := g.nodes
	d := &lossDetector{
		g:           g,
		obs:         obs,
		nodeTimeout: nodeTimeout,
		configs:     make([]pubsub.Config, len(nodes)),
		name:        "redlock-invalidations-" + newToken(),
		dialled:     make([]int64, len(nodes)),
		ids:         make([]int64, len(nodes)),
		watched:     map[string]*holding{},
		pending:     map[string]struct{}{},
		wake:        make(chan struct{}, 1),
	}
	usable := false
	for i, n := range nodes {
		dial := dialerOf(n.pool)
		onKeys := d.invalidated
		if cp, ok := n.pool.(clusterPool); ok { // a cluster node's keys carry its hash tag
			dial = cp.dial
			onKeys = func(keys []string) {
				for i, k := range keys {
					keys[i] = untagged(k)
				}
				d.invalidated(keys)
			}
		}
		if dial == nil {
			continue
		}
		usable = true
		d.configs[i] = pubsub.Config{
			Dial:           func(ctx context.Context) (redis.Conn, error) { return d.dial(ctx, i, dial) },
			Spawn:          g.o.spawn,
			OnKeys:         func(_ string, keys []string) { onKeys(keys) },
			OnConnect:      func(bool) { d.connected(i) },
			OnDisconnect:   func(error) { d.disconnected(i) },
			HealthInterval: subscriberHealth,
			DialTimeout:    max(nodeTimeout, minStall),
			MinBackoff:     minSubscriberBackoff,
			MaxBackoff:     maxSubscriberBackoff,
			Logger:         logger,
		}
	}
	if !usable {
		return nil
	}
	for _, n := range nodes {
		n.det = d
	}
	return d
}

// dial opens node i's subscriber connection, names it, and learns its
// client id, the target of the command connection's redirect, in one round
// trip.
func (d *lossDetector) dial(ctx context.Context, i int, dial func(context.Context) (redis.Conn, error)) (redis.Conn, error) {
	c, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	err = c.Send("CLIENT", "SETNAME", d.name)
	var id int64
	if err == nil { // reads both replies; fails with SETNAME's error reply too
		id, err = redis.Int64(redis.DoContext(c, ctx, "CLIENT", "ID"))
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	d.mu.Lock()
	d.dialled[i] = id
	d.mu.Unlock()
	return c, nil
}

// start makes the subscribers at the first watch; d.mu is held. A
// subscriber the owner refuses (it is closing) is left out.
func (d *lossDetector) start() {
	if d.started || d.closed {
		return
	}
	d.started = true
	for _, cfg := range d.configs {
		if cfg.Dial == nil {
			continue
		}
		if s, err := pubsub.New(cfg); err == nil {
			_ = s.Subscribe(invalidateChannel) // fails only once closed
			d.subs = append(d.subs, s)
		}
	}
}

// watch starts watching holding h of l, whose attempt began at sent, and
// arms it: it is checked trackDelay from now (monotonic()), which tracks
// its key. An
// attempt that began before tracking was last re-established may have
// been read untracked on a connection that is gone: it is checked at
// once.
func (d *lossDetector) watch(l *Lock, h *holding, sent, now time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.start()
	h.watchNext = d.watched[l.name]
	d.watched[l.name] = h
	if sent <= d.since {
		d.pending[l.name] = struct{}{}
	} else {
		d.arming = append(d.arming, arming{name: l.name, h: h, due: now + trackDelay})
	}
	d.run()
}

// armDue queues the due armings for a check, unless their holding has
// ended; d.mu is held.
func (d *lossDetector) armDue(now time.Duration) {
	q, k := d.arming, 0
	for ; k < len(q) && q[k].due <= now; k++ {
		if d.isWatched(q[k].name, q[k].h) {
			d.pending[q[k].name] = struct{}{}
		}
	}
	// The ones left are at most trackDelay's worth of acquisitions.
	n := copy(q, q[k:])
	clear(q[n:])
	d.arming = q[:n]
}

// isWatched reports whether holding h of the lock name is watched; d.mu is
// held.
func (d *lossDetector) isWatched(name string, h *holding) bool {
	for p := d.watched[name]; p != nil; p = p.watchNext {
		if p == h {
			return true
		}
	}
	return false
}

// unwatch stops watching holding h of the lock name.
func (d *lossDetector) unwatch(name string, h *holding) {
	d.mu.Lock()
	defer d.mu.Unlock()
	head := d.watched[name]
	switch {
	case head == nil:
		return
	case head == h && h.watchNext == nil:
		delete(d.watched, name)
	case head == h:
		d.watched[name] = h.watchNext
	default:
		for p := head; p.watchNext != nil; p = p.watchNext {
			if p.watchNext == h {
				p.watchNext = h.watchNext
				break
			}
		}
	}
	h.watchNext = nil
}

// invalidated queues the watched names among keys (every watched name for
// nil: a flush) for a check. It runs in a subscriber's reader: it only
// queues.
func (d *lossDetector) invalidated(keys []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if keys == nil {
		for name := range d.watched {
			d.pending[name] = struct{}{}
		}
	}
	for _, k := range keys {
		if _, ok := d.watched[k]; ok {
			d.pending[k] = struct{}{}
		}
	}
	d.run()
}

// connected records that node i's subscriber is up and subscribed: the
// command connection must be redirected to it, and every name checked.
func (d *lossDetector) connected(i int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ids[i] = d.dialled[i]
	d.retrack |= 1 << i
	d.run()
}

// disconnected records that node i's subscriber is down: invalidations
// of that node are lost until it is back.
func (d *lossDetector) disconnected(i int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ids[i] = 0
	d.tracked &^= 1 << i
}

// redirect returns the client id that node i's new command connection
// must redirect its invalidations to, or 0 while the subscriber is down.
func (d *lossDetector) redirect(i int) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ids[i]
}

// errMisdirected: the client a new command connection was redirected to
// is not a subscriber of this factory (the server restarted, and the id
// names another client now).
var errMisdirected = errors.New("redlock: the tracking redirect names a client that is not the factory's subscriber")

// checkRedirect reads the replies to CLIENT TRACKING on REDIRECT and to
// CLIENT LIST ID of its target, sent by node.setup on a new command
// connection before any other command. A refused redirect (the subscriber
// has just gone) is no failure of the connection: the subscriber's return
// turns tracking on. A target that is not the factory's subscriber would
// receive the invalidations: tracking is turned off again at once, before
// the connection reads any key.
func (d *lossDetector) checkRedirect(ctx context.Context, c redis.Conn, tracking, target any) error {
	if _, err := redis.String(tracking, nil); err != nil {
		return err
	}
	if line, _ := redis.String(target, nil); strings.Contains(line, " name="+d.name+" ") {
		return nil
	}
	if _, err := redis.DoContext(c, ctx, "CLIENT", "TRACKING", "off"); err != nil {
		return err
	}
	return errMisdirected
}

// setUp records that node i has a new command connection, on which
// tracking was turned on with redirect id unless id is 0 or err says it
// failed (the subscriber is gone: its return turns it on). What the old
// connection tracked is not tracked any more: every name is checked again.
func (d *lossDetector) setUp(i int, id int64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id != 0 {
		d.enabled |= 1 << i
	}
	if id != 0 && err == nil && d.ids[i] == id {
		d.tracked |= 1 << i
	} else {
		d.tracked &^= 1 << i
	}
	d.recheckAll()
}

// recheckAll queues every watched name and notes that tracking changed;
// d.mu is held.
func (d *lossDetector) recheckAll() {
	d.since = monotonic()
	for name := range d.watched {
		d.pending[name] = struct{}{}
	}
	d.run()
}

// run starts the worker when there is work and none runs, or wakes it
// when it waits for an arming and a check or a redirect is queued; d.mu is
// held.
func (d *lossDetector) run() {
	urgent := len(d.pending) > 0 || d.retrack != 0
	switch {
	case d.closed:
	case d.running && urgent:
		select {
		case d.wake <- struct{}{}:
		default: // a wake-up is already on its way
		}
	case !d.running && (urgent || len(d.arming) > 0):
		d.running = d.g.o.spawn(d.work) // refused only once the owner closed
	}
}

// work is the worker: it redirects the command connections whose
// subscriber came back, then checks the queued names in batches, and
// waits for the armings that are not due yet, until nothing is left.
func (d *lossDetector) work() {
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	for {
		d.mu.Lock()
		d.armDue(monotonic() + armSlack)
		if d.g.o.closing() || len(d.pending) == 0 && d.retrack == 0 && len(d.arming) == 0 {
			clear(d.pending)
			d.retrack = 0
			d.arming = nil
			d.running = false
			d.mu.Unlock()
			return
		}
		if retrack := d.retrack; retrack != 0 {
			ids := append([]int64(nil), d.ids...)
			d.retrack = 0
			d.mu.Unlock()
			d.track(retrack, ids)
			continue
		}
		if len(d.pending) == 0 { // only armings, none due yet
			t.Reset(d.arming[0].due - monotonic())
			d.mu.Unlock()
			select {
			case <-t.C:
			case <-d.wake:
				t.Stop()
			case <-d.g.o.dying:
			}
			continue
		}
		var batches [][]*holding
		var batch []*holding
		for name := range d.pending {
			delete(d.pending, name)
			for h := d.watched[name]; h != nil; h = h.watchNext {
				batch = append(batch, h)
			}
			if len(batch) >= maxCheckBatch {
				batches, batch = append(batches, batch), nil
				if len(batches) == maxCheckRounds {
					break
				}
			}
		}
		if len(batch) > 0 {
			batches = append(batches, batch)
		}
		d.mu.Unlock()
		d.check(batches)
	}
}

// track turns tracking on, redirected to ids, on the command connections
// of the nodes in mask, then queues every name for a check: invalidations
// were lost while the subscriber was away. The check is sent after the
// CLIENT TRACKING on the same connection, so its read tracks the keys.
func (d *lossDetector) track(mask uint64, ids []int64) {
	for i, n := range d.g.nodes {
		if mask&(1<<i) == 0 || ids[i] == 0 {
			continue
		}
		cmd := plainCmd(judgeOK, "CLIENT", "TRACKING", "on", "REDIRECT", ids[i], "NOLOOP")
		rep := n.do(d.g.o.life, cmd, d.nodeTimeout)
		d.mu.Lock()
		d.enabled |= 1 << i
		if rep.err == nil && d.ids[i] == ids[i] {
			d.tracked |= 1 << i
		}
		d.mu.Unlock()
	}
	d.mu.Lock()
	d.recheckAll()
	d.mu.Unlock()
}

// check asks every node whether it still holds each lock of the batches,
// in one call per node and batch, all sent at once, and ends the holdings
// that a quorum no longer holds. A check that cannot decide (nodes did not
// answer) leaves the holding to its extension and its validity.
func (d *lossDetector) check(batches [][]*holding) {
	fan := d.g.fan(len(d.g.nodes), d.nodeTimeout, d.obs)
	rounds := make([]round, len(batches))
	for k, batch := range batches {
		keys := make([]any, len(batch))
		tokens := make([]any, len(batch))
		for i, h := range batch {
			keys[i], tokens[i] = h.l.nameArg, h.arg
		}
		rounds[k] = fan.send(context.Background(), checkManyScript.cmd(judgeList(len(batch)), keys, tokens...))
	}
	for k, batch := range batches {
		r := &rounds[k]
		fan.wait(context.Background(), r, true)
		for i, h := range batch {
			d.decide(h, r, i)
		}
		r.free()
	}
}

// decide ends holding h when more nodes refused lock i of check round r
// than a quorum allows.
func (d *lossDetector) decide(h *holding, r *round, i int) {
	l := h.l
	held := 0
	r.each(func(_ *node, rep *reply) {
		if rep.err == nil && rep.raw.([]int64)[i] == 1 {
			held++
		}
	})
	if refused := len(r.all) - len(r.errs) - held; refused > len(d.g.nodes)-l.cfg.quorum {
		l.lose(h, LossDetected, fmt.Errorf("%w: lock %q is held on %d of %d nodes, quorum %d (checked after a change of its key)",
			ErrLockLost, l.name, held, len(d.g.nodes), l.cfg.quorum))
	}
}

// untrack turns tracking off on the command connections where it was
// turned on, before they go back to their pools at Close; nobody waits for
// the replies, which the transports' close reads.
func (d *lossDetector) untrack() {
	d.mu.Lock()
	enabled := d.enabled
	d.mu.Unlock()
	cmd := plainCmd(judgeOK, "CLIENT", "TRACKING", "off")
	for i, n := range d.g.nodes {
		if enabled&(1<<i) == 0 {
			continue
		}
		b := getRoundBuf(1, 1, false)
		c := &b.calls[0]
		c.cmd, c.n, c.buf, c.fin = cmd, n, b, newFinish(1)
		n.tr.start(context.Background(), c)
		b.unref() // nobody reads the reply
	}
}

// close stops the subscribers and waits for their goroutines; the worker
// ends by itself, its rounds cut short by the owner's Close. It is called
// without d.mu: the subscribers' callbacks take it.
func (d *lossDetector) close() {
	d.mu.Lock()
	d.closed = true
	subs := d.subs
	d.mu.Unlock()
	for _, s := range subs {
		s.Close()
	}
	d.mu.Lock()
	clear(d.ids) // a command connection dialled from now on turns no tracking on
	d.mu.Unlock()
}
