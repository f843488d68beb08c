package redlock

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/google/uuid"
)

// Lock is a distributed mutex over three or more independent Redis nodes,
// held when a quorum of them store its token (the Redlock algorithm). Use
// Acquire or TryAcquire, then defer Release.
//
// A lock can be lost at any time: its validity may run out (a process pause,
// an extension that could not reach a quorum) or its keys may vanish (a node
// restart without persistence). Done is closed and Err returns ErrLockLost as
// soon as the loss is detected; work that must not outlive the lock should
// watch Done, or run under Factory.Do.
//
// A Lock may be reused after Release. Its methods are safe for concurrent
// use, but it is one holder: a second Acquire while held is an
// ErrInvalidOperation, not a wait. For nested acquisition use RLock.
type Lock struct {
	name    string
	cfg     config
	initErr error // invalid name or options, returned by every call
	fan     fanout
	owner   *Factory // nil for locks made by NewLock
	bg      *sync.WaitGroup
	ext     *extender // shared by a factory's locks

	// The name and TTL as command arguments, boxed once.
	nameArg, ttlArg any

	mu        sync.Mutex
	acquiring bool
	cur       *holding // the current or most recent holding; nil before the first
	lastToken string
}

// holding is one period during which the lock is held, from a successful
// Acquire to Release or loss.
type holding struct {
	att        *attempt
	done       chan struct{}
	err        error       // why done was closed: nil after Release, ErrLockLost after a loss
	ended      bool        // done is closed
	over       atomic.Bool // ended, readable without the lock's mutex
	validUntil time.Time   // monotonic end of the current validity
	expiry     *time.Timer
}

// attempt states, read by the node goroutines of an acquire attempt once
// its outcome is decided.
const (
	attemptPending  int32 = iota
	attemptWon            // held: Release deletes the keys of the counted nodes
	attemptFailed         // every key the attempt may have set must go
	attemptReleased       // released or lost: late (uncounted) keys must go
)

// attempt is one round of SET NX PX with a fresh token.
type attempt struct {
	token   string
	arg     any   // token, boxed once for every command that carries it
	lock    *Lock // for announcing its release
	state   atomic.Int32
	counted uint64        // bit per node: its reply was part of the decision
	decided chan struct{} // closed once state and counted are set
}

// closedDone is what Done returns before the first Acquire.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// NewLock creates a Lock named name over nodes. It returns an
// *InsufficientNodesError for fewer than 3 nodes and an ErrInvalidArgument
// for an empty name, nil or duplicate nodes, or an invalid option. The lock
// is not acquired.
func NewLock(name string, nodes []Pool, opts ...Option) (*Lock, error) {
	ns, err := newNodes(nodes)
	if err != nil {
		return nil, err
	}
	bg := new(sync.WaitGroup)
	l := newLock(name, ns, defaultConfig().apply(opts), nil, bg, newExtender(ns, bg, false), true)
	return l, l.initErr
}

// newLock builds a lock; a validation error is kept in initErr.
func newLock(name string, ns []*node, cfg config, owner *Factory, bg *sync.WaitGroup, ext *extender, autoextendDefault bool) *Lock {
	if cfg.autoextend == nil {
		cfg.autoextend = &autoextendDefault
	}
	l := &Lock{name: name, cfg: cfg, owner: owner, bg: bg, ext: ext, nameArg: name}
	if name == "" {
		l.initErr = invalidArg("lock name is empty")
	} else if err := l.cfg.validate(len(ns)); err != nil {
		l.initErr = err
	}
	l.ttlArg = l.cfg.ttlMs()
	l.fan = fanout{nodes: ns, quorum: l.cfg.quorum, nodeTimeout: l.cfg.nodeTimeout, bg: bg}
	return l
}

// Name returns the lock's name, which is also its key on every node.
func (l *Lock) Name() string { return l.name }

// Token returns the random token of the current or most recent holding, or
// "" before the first successful Acquire.
func (l *Lock) Token() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastToken
}

// Done returns a channel that is closed when the current holding ends:
// Release, or a detected loss (see Err). Before the first Acquire it returns
// a closed channel. A new Acquire starts a new holding with a new channel.
func (l *Lock) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.cur
	switch {
	case h == nil || h.ended:
		return closedDone
	case h.done == nil: // made on demand: most holders never ask
		h.done = make(chan struct{})
	}
	return h.done
}

// Err returns nil while the lock is held or after a normal Release, an
// error matching ErrLockLost once a loss has been detected, and ErrClosed
// when Factory.Close released it.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == nil {
		return nil
	}
	return l.cur.err
}

// Acquire blocks until the lock is acquired or ctx ends, retrying after a
// random pause of up to the retry delay. It returns the validity: how long
// the lock can be considered held from now, unless extended. On a cancelled
// or expired ctx it returns an error matching ErrNotAcquired and ctx.Err(),
// and leaves no key behind. When autoextend is on (the default for Lock) the
// lock is extended in the background until Release.
func (l *Lock) Acquire(ctx context.Context) (time.Duration, error) {
	return l.acquire(ctx, 0)
}

// TryAcquire makes at most RetryTimes+1 attempts (4 by default) and returns
// an error matching ErrNotAcquired when none succeeded.
func (l *Lock) TryAcquire(ctx context.Context) (time.Duration, error) {
	return l.acquire(ctx, l.cfg.retryTimes+1)
}

// AcquireOrExtend extends the lock when it is held and acquires it (blocking,
// as Acquire) when it is not or when the extension finds it lost.
func (l *Lock) AcquireOrExtend(ctx context.Context) (time.Duration, error) {
	if l.held() {
		v, err := l.Extend(ctx)
		if !errors.Is(err, ErrLockLost) {
			return v, err
		}
	}
	return l.Acquire(ctx)
}

// held reports whether the lock is in the held state locally.
func (l *Lock) held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur != nil && !l.cur.ended
}

// usable returns the error that stops any call: invalid construction or a
// closed factory.
func (l *Lock) usable() error {
	if l.initErr != nil {
		return l.initErr
	}
	if l.owner != nil && l.owner.isClosed() {
		return ErrClosed
	}
	return nil
}

// acquire runs attempts until one succeeds, maxAttempts (0: unlimited) are
// spent, or ctx ends.
func (l *Lock) acquire(ctx context.Context, maxAttempts int) (time.Duration, error) {
	if err := l.usable(); err != nil {
		return 0, err
	}
	if err := l.beginAcquire(); err != nil {
		return 0, err
	}
	rw := l.newRetryWaiter()
	defer rw.close()
	if maxAttempts == 0 {
		if err := rw.joinQueue(ctx); err != nil {
			l.endAcquire()
			return 0, notAcquired(ctx, nil)
		}
	}
	var lastErr error
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			l.endAcquire()
			return 0, notAcquired(ctx, lastErr)
		}
		if err := l.usable(); err != nil { // the factory closed meanwhile
			l.endAcquire()
			return 0, err
		}
		rw.beforeAttempt()
		validity, att, r, err := l.attempt(ctx)
		if err == nil {
			return validity, l.startHolding(att, r)
		}
		lastErr = err
		if maxAttempts > 0 && n >= maxAttempts {
			l.endAcquire()
			return 0, fmt.Errorf("%w after %d attempt(s): %w", ErrNotAcquired, n, lastErr)
		}
		if err := rw.pause(ctx, r); err != nil {
			l.endAcquire()
			return 0, notAcquired(ctx, lastErr)
		}
	}
}

// notAcquired is the error of an acquire ended by its context: it matches
// ErrNotAcquired and ctx.Err().
func notAcquired(ctx context.Context, last error) error {
	if last == nil {
		return fmt.Errorf("%w: %w", ErrNotAcquired, ctx.Err())
	}
	return fmt.Errorf("%w: %w (last attempt: %w)", ErrNotAcquired, ctx.Err(), last)
}

// beginAcquire moves the lock into the acquiring state.
func (l *Lock) beginAcquire() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.acquiring:
		return invalidOp("lock %q: an Acquire is already in progress", l.name)
	case l.cur != nil && !l.cur.ended:
		return invalidOp("lock %q is already held; use RLock to nest", l.name)
	}
	l.acquiring = true
	return nil
}

func (l *Lock) endAcquire() {
	l.mu.Lock()
	l.acquiring = false
	l.mu.Unlock()
}

// attempt makes one Redlock attempt: SET NX PX with a fresh token on every
// node at once, deciding at quorum. It returns the validity, or an error
// that says why the attempt failed. A failed attempt's keys are deleted on
// every node that did not refuse: queued behind the SETs on pipelined
// connections, or by the node goroutines as their answers arrive, late ones
// included, on pool connections.
func (l *Lock) attempt(ctx context.Context) (time.Duration, *attempt, round, error) {
	att := &attempt{token: newToken(), lock: l}
	att.arg = att.token
	// The SETs outlive a cancelled ctx (bounded by the node timeout), so a
	// cancelled attempt learns what each node did and can clean up after it.
	set := nodeCmd{name: "SET", args: []any{l.nameArg, att.arg, "NX", "PX", l.ttlArg}, judge: judgeSet, detached: true}
	var after func(*node, reply)
	if !l.pipelined() { // late replies are cleaned up in their goroutines
		att.decided = make(chan struct{})
		defer close(att.decided)
		after = func(n *node, rep reply) { l.cleanupLate(ctx, att, n, rep) }
	}
	r := l.fan.run(ctx, set, false, after)
	att.counted = r.got
	validity := l.validity(r)
	if r.reached(l.cfg.quorum) && validity > 0 {
		att.state.Store(attemptWon)
		return validity, att, r, nil
	}
	att.state.Store(attemptFailed)
	if l.pipelined() {
		l.discardQueued(att.arg, r)
	}
	if r.reached(l.cfg.quorum) {
		return 0, nil, r, fmt.Errorf("validity %v after %v is not positive", validity, r.elapsed())
	}
	return 0, nil, r, r.detail("set", len(l.fan.nodes), l.cfg.quorum)
}

// newToken returns a fresh random token (a version 4 UUID) in one
// allocation.
func newToken() string {
	var buf [36]byte
	id := uuid.New()
	hex.Encode(buf[0:8], id[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], id[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], id[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], id[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:], id[10:])
	return string(buf[:])
}

// retryOn deletes the attempt's key on node n again in the background: the
// node failed its delete, so it may still hold the key, and the next holder
// should find it free.
func (a *attempt) retryOn(n *node) {
	l := a.lock
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		l.discardOn(context.Background(), n, a.arg, true)
	}()
}

// announce tells the local waiters that the attempt's holding was released.
func (a *attempt) announce() {
	if w := a.lock.waker(); w != nil {
		w.released(a.lock.name, a.token)
	}
}

// pipelined reports whether the lock's nodes share pipelined connections.
func (l *Lock) pipelined() bool { return l.fan.nodes[0].pipe != nil }

// discardQueued deletes a failed attempt's key on every node that did not
// refuse it, without waiting. On a pipelined connection the delete is queued
// behind the attempt's own SET, so it runs after it even when that SET's
// reply has not arrived yet.
func (l *Lock) discardQueued(token any, r round) {
	var refused uint64
	r.each(func(n *node, rep *reply) {
		if rep.err == nil && !rep.ok {
			refused |= 1 << n.index
		}
	})
	cmd := l.scriptCmd(releaseScript, token)
	slots, sink := make([]reply, len(l.fan.nodes)), make(chan uint8, len(l.fan.nodes))
	for _, n := range l.fan.nodes {
		if refused&(1<<n.index) == 0 {
			n.start(context.Background(), cmd, slots, sink)
		}
	}
}

// Reply readers of the node commands.
func judgeSet(v any) reply { return reply{ok: v != nil} }

func judgeOne(v any) reply {
	n, err := redis.Int64(v, nil)
	return reply{ok: n == 1, value: n, err: err}
}

func judgePTTL(v any) reply {
	n, err := redis.Int64(v, nil)
	return reply{ok: n > 0, value: n, err: err}
}

// cleanupLate runs in a node goroutine of an attempt after its reply. If
// the node may hold the attempt's key (it said yes, or did not answer), the
// key is deleted there when the attempt failed, and when the holding has
// already ended but this reply came too late to be counted (so Release did
// not know about it). Doing it here, after the node's SET has completed,
// orders the delete after the set even when the answer came late.
func (l *Lock) cleanupLate(ctx context.Context, att *attempt, n *node, rep reply) {
	if !rep.ok && rep.err == nil {
		return // the node refused: the key is another holder's, never ours
	}
	<-att.decided
	switch att.state.Load() {
	case attemptFailed:
	case attemptReleased:
		if att.counted&(1<<n.index) != 0 {
			return // Release deletes it
		}
	default:
		return
	}
	l.discardOn(ctx, n, att.arg, rep.err != nil)
}

// discardOn deletes a token's key on one node over a pool connection. A
// delete that fails is tried again, and so is one that found nothing when
// the node's answer to the SET was lost (a timeout or reset): that SET may
// still be travelling on its closed connection and land after this delete.
// The pauses between tries double from the node timeout, for at most
// maxDiscardWait node timeouts in all (or the TTL, when shorter: the key is
// gone by then); a factory's Close cuts the pause short for one last try.
func (l *Lock) discardOn(ctx context.Context, n *node, token any, uncertain bool) {
	del := l.scriptCmd(releaseScript, token)
	pause, waited, last := l.cfg.nodeTimeout, time.Duration(0), false
	for try := 0; ; try++ {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.nodeTimeout)
		rep := n.run(cctx, del)
		cancel()
		if last || rep.err == nil && (rep.ok || !uncertain || try >= minUncertainTries-1) {
			return
		}
		if waited += pause; waited > min(l.cfg.ttl, maxDiscardWait*l.cfg.nodeTimeout) {
			return
		}
		last = !l.sleepUnlessClosed(pause)
		pause *= 2
	}
}

// maxDiscardWait bounds, in node timeouts, how long discardOn keeps trying:
// pauses of 1, 2 and 4.
const maxDiscardWait = 7

// minUncertainTries is how many deletes a key whose SET may still land
// gets, even when the first finds nothing.
const minUncertainTries = 3

// sleepUnlessClosed waits d; it reports false at once when the lock's
// factory closes.
func (l *Lock) sleepUnlessClosed(d time.Duration) bool {
	var closing <-chan struct{}
	if l.owner != nil {
		closing = l.owner.closing
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-closing:
		return false
	}
}

// validity is what remains of the TTL after a round: ttl - elapsed - drift.
func (l *Lock) validity(r round) time.Duration {
	return l.cfg.ttl - r.elapsed() - l.cfg.drift()
}

// startHolding records a successful acquisition and starts the expiry timer
// and, if configured, autoextension.
func (l *Lock) startHolding(att *attempt, r round) error {
	h := &holding{
		att:        att,
		validUntil: r.start.Add(l.cfg.ttl - l.cfg.drift()),
	}
	l.mu.Lock()
	l.acquiring = false
	l.cur = h
	l.lastToken = att.token
	h.expiry = time.AfterFunc(time.Until(h.validUntil), func() { l.expire(h) })
	l.mu.Unlock()
	if l.owner != nil {
		l.owner.track(l, true)
	}
	if *l.cfg.autoextend {
		l.ext.schedule(l, h, l.cfg.autoextendTimeout)
	}
	return nil
}

// expire is the expiry timer's callback: the validity ran out unextended.
func (l *Lock) expire(h *holding) {
	l.mu.Lock()
	if time.Now().Before(h.validUntil) { // extended meanwhile; the timer was re-armed
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	l.lose(h, fmt.Errorf("%w: validity of lock %q ran out", ErrLockLost, l.name))
}

// lose ends holding h as lost: Done closes, Err reports cause, autoextension
// stops, and the keys still carrying the token are deleted in the background.
func (l *Lock) lose(h *holding, cause error) {
	if !l.endHolding(h, cause) {
		return
	}
	if l.cfg.logger != nil {
		l.cfg.logger.Warn("redlock: lock lost", "lock", l.name, "err", cause)
	}
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.nodeTimeout)
		defer cancel()
		l.releaseNodes(ctx, h.att)
	}()
}

// endHolding closes h once; it reports whether this call closed it.
func (l *Lock) endHolding(h *holding, cause error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h.ended {
		return false
	}
	h.ended = true
	h.over.Store(true)
	h.err = cause
	h.att.state.Store(attemptReleased)
	h.expiry.Stop()
	if cause != nil {
		l.ext.wake() // lost or closed: the schedule drops h now
	}
	if h.done != nil {
		close(h.done)
	}
	if l.owner != nil {
		l.owner.track(l, false)
	}
	return true
}

// current returns the live holding, or the error for calls that need one.
func (l *Lock) current(op string) (*holding, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.cur == nil:
		return nil, invalidOp("%s of lock %q before Acquire", op, l.name)
	case l.cur.ended && l.cur.err != nil:
		return nil, l.cur.err
	case l.cur.ended:
		return nil, invalidOp("%s of lock %q after Release", op, l.name)
	}
	return l.cur, nil
}

// Extend resets the lock's TTL on the nodes that still hold its token and
// returns the new validity. It fails with ErrLockLost when a quorum no longer
// holds the token (the lock is then marked lost), with ErrNoQuorum when too
// few nodes answered (the lock stays held until its validity runs out), and
// with ErrInvalidOperation before Acquire or after Release.
func (l *Lock) Extend(ctx context.Context) (time.Duration, error) {
	h, err := l.current("Extend")
	if err != nil {
		return 0, err
	}
	return l.extendHolding(ctx, h)
}

// extendHolding extends holding h; see Extend.
func (l *Lock) extendHolding(ctx context.Context, h *holding) (time.Duration, error) {
	bump := l.scriptCmd(extendScript, h.att.arg, l.ttlArg)
	r := l.fan.run(ctx, bump, false, nil)
	validity := l.validity(r)
	if !r.reached(l.cfg.quorum) || validity <= 0 {
		err := r.failure("extend", len(l.fan.nodes), l.cfg.quorum)
		if errors.Is(err, ErrLockLost) {
			l.lose(h, err)
		}
		return 0, err
	}
	if err := l.extended(h, r.start); err != nil {
		return 0, err
	}
	return validity, nil
}

// extended records an extension of h whose commands were sent at start:
// the keys live until start+ttl, so the validity ends drift before that.
func (l *Lock) extended(h *holding, start time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h.ended { // released or lost while extending
		if h.err != nil {
			return h.err
		}
		return invalidOp("lock %q was released during Extend", l.name)
	}
	if until := start.Add(l.cfg.ttl - l.cfg.drift()); until.After(h.validUntil) {
		h.validUntil = until
		h.expiry.Reset(time.Until(until))
	}
	return nil
}

// Release ends the holding: it stops autoextension, deletes the key on every
// node that holds the token, and closes Done. It succeeds iff a quorum of
// nodes deleted the key; otherwise the error matches ErrLockLost (a quorum no
// longer held it) or ErrNoQuorum (nodes did not answer; their keys expire
// with the TTL) and lists the per-node failures. Either way the lock is no
// longer held and may be acquired again. Release before Acquire, or twice,
// is an ErrInvalidOperation.
func (l *Lock) Release(ctx context.Context) error {
	return l.release(ctx, nil)
}

// release ends the current holding with cause (nil for a plain Release).
func (l *Lock) release(ctx context.Context, cause error) error {
	if l.initErr != nil {
		return l.initErr
	}
	l.mu.Lock()
	h := l.cur
	l.mu.Unlock()
	if h == nil {
		return invalidOp("Release of lock %q before Acquire", l.name)
	}
	closedNow := l.endHolding(h, cause)
	l.ext.unschedule(h, true)
	if !closedNow {
		l.mu.Lock()
		defer l.mu.Unlock()
		if h.err != nil {
			return h.err // lost or closed earlier; its keys were cleaned up then
		}
		return invalidOp("lock %q released twice", l.name)
	}
	r := l.releaseNodes(ctx, h.att)
	if !r.reached(l.cfg.quorum) {
		return r.failure("released", len(l.fan.nodes), l.cfg.quorum)
	}
	return cause
}

// releaseNodes runs the release script on every node, deciding at quorum,
// and wakes the next local waiter of the lock, if any. On pipelined nodes
// that happens as soon as the deletes are queued: a waiter's SET, queued
// after them on the same connections, reaches every node after its delete,
// so the handoff saves the release's round trip. On pool connections it
// happens once a quorum released.
func (l *Lock) releaseNodes(ctx context.Context, att *attempt) round {
	del := l.scriptCmd(releaseScript, att.arg)
	del.detached = true
	del.release = att
	r := l.fan.run(ctx, del, false, nil)
	if !l.pipelined() && r.reached(l.cfg.quorum) {
		att.announce()
	}
	return r
}

// scriptCmd is a one-key lock script with the token and extra arguments.
// On pipelined nodes only the EVALSHA arguments are built.
func (l *Lock) scriptCmd(s *redis.Script, token any, extra ...any) nodeCmd {
	judge := judgeOne
	if s == checkScript {
		judge = judgePTTL
	}
	if l.pipelined() {
		wire := append([]any{hashArgs[s], 1, l.nameArg, token}, extra...)
		return nodeCmd{script: s, args: wire[1:], wire: wire, judge: judge}
	}
	return nodeCmd{script: s, args: append([]any{1, l.nameArg, token}, extra...), judge: judge}
}

// waker returns the factory's waker, or nil.
func (l *Lock) waker() *waker {
	if l.owner == nil {
		return nil
	}
	return l.owner.wake
}

// CheckTimes asks every node for the remaining TTL of the lock's key and
// reports whether the lock can still be considered held. times has one entry
// per node, in node order: the node's PTTL minus the time the check took and
// the drift, or 0 when the node does not hold the token, did not answer, or
// the remainder is not positive. held is true iff at least a quorum of
// entries are positive. err is ErrInvalidOperation before Acquire, and an
// ErrNoQuorum listing the node failures when held is false because nodes
// did not answer. A check that finds the token gone from a quorum marks the
// lock lost.
func (l *Lock) CheckTimes(ctx context.Context) (held bool, times []time.Duration, err error) {
	h, err := l.current("CheckTimes")
	if err != nil {
		if errors.Is(err, ErrLockLost) {
			return false, make([]time.Duration, len(l.fan.nodes)), err
		}
		return false, nil, err
	}
	check := l.scriptCmd(checkScript, h.att.arg)
	r := l.fan.run(ctx, check, true, nil)
	spent := r.elapsed() + l.cfg.drift()
	times = make([]time.Duration, len(l.fan.nodes))
	positive := 0
	r.each(func(n *node, rep *reply) {
		if t := time.Duration(rep.value)*time.Millisecond - spent; rep.err == nil && t > 0 {
			times[n.index] = t
			positive++
		}
	})
	if positive >= l.cfg.quorum {
		return true, times, nil
	}
	if len(l.fan.nodes)-len(r.errs)-positive > len(l.fan.nodes)-l.cfg.quorum {
		lost := fmt.Errorf("%w: lock %q is held on %d of %d nodes, quorum %d", ErrLockLost, l.name, positive, len(l.fan.nodes), l.cfg.quorum)
		l.lose(h, lost)
		return false, times, nil
	}
	return false, times, r.failure("held", len(l.fan.nodes), l.cfg.quorum)
}

// Locked reports whether the lock is held: acquired, not released, and
// confirmed by CheckTimes on a quorum of nodes.
func (l *Lock) Locked(ctx context.Context) bool {
	held, _, _ := l.CheckTimes(ctx)
	return held
}

// sleepCtx waits for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
