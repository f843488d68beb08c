package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// Lock is a distributed mutex over three or more independent Redis nodes,
// held when a quorum of them store its token (the Redlock algorithm). Use
// Acquire or TryAcquire, then defer Release.
//
// A lock can be lost at any time: its validity may run out (a process pause,
// an extension that could not reach a quorum) or its keys may vanish (a node
// restart without persistence). Done is closed and Err returns ErrLockLost
// once the loss is detected: within a round trip of the change of its keys
// on a node for a Factory's lock with loss detection (WithLossDetection),
// otherwise at the next extension or CheckTimes, or when the validity runs
// out. Work that must not outlive the lock should watch Done, or run under
// Factory.Do.
//
// A Lock may be reused after Release. Its methods are safe for concurrent
// use, but it is one holder: a second Acquire while held is an
// ErrInvalidOperation, not a wait. For nested acquisition use RLock.
type Lock struct {
	name string
	*lockShape
	initErr error // invalid name or options, returned by every call
	f       *Factory
	obs     *observer // nil: not observed (observe.go)

	nameArg any        // the name as a command argument, boxed once
	x       *lockExtra // what fenced locks and recipes need; nil for a plain lock

	held // the current or most recent holding
}

// NewLock creates a Lock named name over nodes, with a private owner of
// its own: commands borrow a pool connection each, and blocked Acquire
// calls poll. It returns an *InsufficientNodesError for fewer than 3 nodes
// and an ErrInvalidArgument for an empty name, nil or duplicate nodes, or
// an invalid option; the lock's calls then return the same error.
func NewLock(name string, nodes []Pool, opts ...Option) (*Lock, error) {
	f, err := newPrivateFactory(nodes, opts)
	if err != nil {
		return nil, err
	}
	l := f.newLock(name, opts, true)
	return l, l.initErr
}

// newLock builds a lock of the factory; a validation error is kept in
// initErr and returned by every call.
func (f *Factory) newLock(name string, opts []Option, autoextendDefault bool) *Lock {
	cfg, err := f.lockConfig(opts)
	on := autoextendDefault
	if cfg.autoextend != nil {
		on = *cfg.autoextend
	}
	cfg.autoextend = &autoextendOff
	if on {
		cfg.autoextend = &autoextendOn
	}
	l := &Lock{name: name, f: f, nameArg: name, initErr: err}
	if name == "" && err == nil {
		l.initErr = invalidArg("lock name is empty")
	}
	if cfg.fencing {
		l.extra().fenceArg = name + FenceSuffix
	}
	l.obs = newObserver(&cfg, name)
	l.lockShape = f.shapeOf(cfg, l.obs, err == nil)
	return l
}

// lockExtra holds what few locks need, so that the many plain locks a
// service may hold do not carry it (docs: W7 in BENCHMARKS.md).
type lockExtra struct {
	fenceArg any // the fence key, boxed once; nil when not fenced (fence.go)
	// suffix is appended to every new token: an Election's value, so that
	// the key carries it. Set only while no Acquire runs.
	suffix string
	// setCmd, if set, replaces SET NX PX in attempts: the script of a
	// ReadLock or WriteLock, given the token.
	setCmd func(token any) *command
}

// extra returns l's lockExtra, made on first use; only constructors and
// code that runs while no Acquire does call it.
func (l *Lock) extra() *lockExtra {
	if l.x == nil {
		l.x = &lockExtra{}
	}
	return l.x
}

// Name returns the lock's name, which is also its key on every node.
func (l *Lock) Name() string { return l.name }

// Token returns the random token of the current or most recent holding, or
// "" before the first successful Acquire.
func (l *Lock) Token() string { return l.token() }

// Done returns a channel that is closed when the current holding ends:
// Release, a detected loss (see Err) or Factory.Close. Before the first
// Acquire it returns a closed channel. A new Acquire starts a new holding
// with a new channel.
func (l *Lock) Done() <-chan struct{} { return l.done() }

// Err returns nil while the lock is held or after a normal Release, an
// error matching ErrLockLost once a loss has been detected, and ErrClosed
// when Factory.Close released it.
func (l *Lock) Err() error { return l.err() }

// Acquire blocks until the lock is acquired or ctx ends, retrying after a
// random pause of up to the retry delay. It returns the validity: how long
// the lock can be considered held from the return, unless extended (0 when
// it ran out before Acquire could return, after a pause longer than it;
// Done closes then). On a cancelled
// or expired ctx it returns an error matching ErrNotAcquired and ctx.Err(),
// and leaves no key behind; once the factory closes, one matching
// ErrNotAcquired and ErrClosed. When autoextend is on (the default for Lock)
// the lock is extended in the background until Release.
func (l *Lock) Acquire(ctx context.Context) (time.Duration, error) {
	return acquire(ctx, l, l.name, 0)
}

// TryAcquire makes at most RetryTimes+1 attempts (4 by default) and returns
// an error matching ErrNotAcquired when none succeeded.
func (l *Lock) TryAcquire(ctx context.Context) (time.Duration, error) {
	return acquire(ctx, l, l.name, l.cfg.retryTimes+1)
}

// AcquireOrExtend extends the lock when it is held and acquires it (blocking,
// as Acquire) when it is not or when the extension finds it lost.
func (l *Lock) AcquireOrExtend(ctx context.Context) (time.Duration, error) {
	if h := l.holding(); h != nil && h.live() {
		v, err := l.Extend(ctx)
		if !errors.Is(err, ErrLockLost) {
			return v, err
		}
	}
	return l.Acquire(ctx)
}

// begin starts an operation that talks to the nodes: it fails on an invalid
// lock, a closed factory, or a node list naming one server twice.
func (l *Lock) begin(ctx context.Context) error {
	if l.initErr != nil {
		return l.initErr
	}
	if err := l.f.o.begin(); err != nil {
		return err
	}
	if err := l.f.set.check(ctx); err != nil {
		l.f.o.end()
		return err
	}
	return nil
}

// A Lock is its own contender (acquire.go).
func (l *Lock) lead() *Lock      { return l }
func (l *Lock) waitFor() []*Lock { return nil } // its own key alone
func (l *Lock) keyTTL() bool     { return true }
func (l *Lock) enter() error     { return l.held.enter("lock", l.name) }

// try makes one attempt and starts the holding it won.
func (l *Lock) try(ctx context.Context) (time.Duration, tally, error) {
	h, t, err := l.attempt(ctx)
	if err != nil {
		return 0, t, err
	}
	until := h.validUntil // before startHolding shares h
	return until, t, l.startHolding(h)
}

// attempt makes one Redlock attempt: SET NX PX with a fresh token on every
// node at once (or the recipe's or the fenced lock's script), deciding at
// quorum. It returns the new holding, or an error that says why the
// attempt failed; a failed attempt's keys are discarded on every node that
// did not refuse.
func (l *Lock) attempt(ctx context.Context) (*holding, tally, error) {
	token := newToken()
	if l.x != nil {
		token += l.x.suffix
	}
	h := &holding{arg: token, l: l}
	var commit func(round, time.Duration) (time.Duration, error)
	if l.cfg.fencing {
		commit = func(r round, v time.Duration) (time.Duration, error) { return l.commitFence(ctx, h, r, v) }
	}
	w, t, err := lockKeys(l).attempt(ctx, l.acquireCommand(h), h.arg, commit)
	if err != nil {
		return nil, t, err
	}
	h.counted, h.fin, h.validUntil = w.counted, w.fin, w.until
	return h, t, nil
}

// discardOf is the delete of the lock's key holding token, which cannot
// outlive the TTL from now.
func (l *Lock) discardOf(token string) discard {
	return discard{key: l.name, token: token, until: time.Now().Add(l.cfg.ttl)}
}

// newToken returns a fresh random token: a non-negative 63-bit random
// number in decimal, in one allocation of 24 bytes. Redis stores a value
// that reads as a 64-bit integer in the key's own object (OBJECT ENCODING
// "int"), so a held key costs a node 117 B against 165 B with a 36-byte
// UUID string (Redis 7.0, BENCHMARKS.md, "Performance, round 3"). A token
// only has to differ from every other token of the same key while both
// could be stored: 63 random bits make a collision of two of them a chance
// of 2^-63.
func newToken() string {
	return strconv.FormatInt(rand.Int64(), 10)
}

// startHolding makes h the lock's current holding: it registers h with
// the owner, then with the extender, which ends it when its validity runs
// out and autoextends it when the lock does. When the factory began
// closing meanwhile, the keys are given up instead and the Acquire fails:
// Close never saw this holding, so it must not survive.
func (l *Lock) startHolding(h *holding) error {
	now := monotonic() // one reading for the holding's start, its expiry and its schedule
	h.mu.Lock()
	h.begun = now
	sent := h.validUntil + l.cfg.drift() - l.cfg.ttl // the attempt's start, on monotonic(): validUntil's inverse
	h.mu.Unlock()
	if err := l.f.o.hold(h); err != nil {
		h.end(ErrClosed)
		r := lockKeys(l).release(context.Background(), &l.fan, []*holding{h})
		r.free()
		return errAcquireClosed
	}
	l.start(h)
	l.f.ext.add(h, *l.cfg.autoextend, l.cfg.autoextendTimeout, now)
	if d := l.f.det; d != nil {
		d.watch(l, h, sent, now)
	}
	return nil
}

// expire ends h as lost when its validity ran out unextended; it reports
// false when an extension moved the validity meanwhile.
func (l *Lock) expire(h *holding) bool {
	if !h.expired() {
		return false
	}
	l.lose(h, LossExpired, fmt.Errorf("%w: validity of lock %q ran out", ErrLockLost, l.name))
	return true
}

// lose ends holding h as lost: Done closes, Err reports cause, autoextension
// stops, the observer hears why, and the nodes' cleaners delete the keys
// that still carry the token.
func (l *Lock) lose(h *holding, why LossCause, cause error) {
	h.mu.Lock()
	if h.cause == nil {
		h.why = why
	}
	h.mu.Unlock()
	if !l.endHolding(h, cause) {
		return
	}
	if l.obs != nil && !h.inSet { // a set's loss is its own event (MultiLock.lose)
		l.obs.lost(l.name, h, why, cause)
	}
	d := l.discardOf(h.token())
	for _, n := range l.fan.nodes {
		n.cleaner.add(d, false)
	}
}

// endHolding ends h with cause, once; it reports whether this call ended
// it.
func (l *Lock) endHolding(h *holding, cause error) bool {
	if !h.end(cause) {
		return false
	}
	l.f.o.unhold(h)
	l.f.ext.drop(h)
	if d := l.f.det; d != nil {
		d.unwatch(l.name, h)
	}
	return true
}

// current returns the live holding, or the error for calls that need one.
func (l *Lock) current(op string) (*holding, error) {
	if l.initErr != nil {
		return nil, l.initErr
	}
	return liveFor(l.holding(), op, "lock", l.name, l.f.o.closing())
}

// Extend resets the lock's TTL on the nodes that still hold its token and
// returns the new validity. It fails with ErrLockLost when a quorum no longer
// holds the token (the lock is then marked lost), with ErrNoQuorum when too
// few nodes answered (the lock stays held until its validity runs out), and
// with ErrInvalidOperation before Acquire or after Release.
func (l *Lock) Extend(ctx context.Context) (time.Duration, error) {
	if err := l.begin(ctx); err != nil {
		return 0, err
	}
	defer l.f.o.end()
	h, err := l.current("Extend")
	if err != nil {
		return 0, err
	}
	return lockKeys(l).extend(ctx, h, []*holding{h})
}

// Release ends the holding: it stops autoextension, deletes the key on every
// node that holds the token, and closes Done. It succeeds iff a quorum of
// nodes confirmed the delete; otherwise the error matches ErrLockLost (a
// quorum no longer held it) or ErrNoQuorum (nodes did not answer in time)
// and says on how many nodes the key was deleted. Either way the lock is no
// longer held locally and may be acquired again, and the nodes that failed
// are retried in the background while the key could still live.
//
// Releasing is cleanup, so ctx's cancellation and deadline do not cut it
// short: a Release with a context that has already ended still deletes
// the keys and reports the outcome, waiting at most one node timeout. ctx
// is kept for its values. Release before Acquire, or twice, is an
// ErrInvalidOperation; after a loss or Factory.Close it returns that
// cause.
func (l *Lock) Release(ctx context.Context) error {
	if l.initErr != nil {
		return l.initErr
	}
	h := l.holding()
	switch {
	case h == nil && l.f.o.closing():
		return ErrClosed
	case h == nil:
		return invalidOp("Release of lock %q before Acquire", l.name)
	}
	if !l.endHolding(h, errReleased) {
		if err := h.Err(); err != nil {
			return err // lost or closed earlier; its keys were cleaned up then
		}
		return invalidOp("lock %q released twice", l.name)
	}
	return lockKeys(l).releaseHeld(ctx, h, []*holding{h})
}

// CheckTimes asks every node for the remaining TTL of the lock's key and
// reports whether the lock can still be considered held. times has one entry
// per node, in node order: the node's PTTL minus the time the check took and
// the drift, or 0 when the node does not hold the token, did not answer, or
// the remainder is not positive. held is true iff at least a quorum of
// entries are positive. err is ErrInvalidOperation before Acquire or after
// Release, an ErrNoQuorum listing the node failures when held is false
// because nodes did not answer, and an error matching ErrLockLost whenever
// the lock is lost: the call that finds the token gone from a quorum marks
// the lock lost and returns that error, and every later call returns it
// too.
func (l *Lock) CheckTimes(ctx context.Context) (held bool, times []time.Duration, err error) {
	if err := l.begin(ctx); err != nil {
		return false, nil, err
	}
	defer l.f.o.end()
	times = make([]time.Duration, len(l.fan.nodes))
	h, err := l.current("CheckTimes")
	if err != nil {
		if errors.Is(err, ErrLockLost) {
			return false, times, err
		}
		return false, nil, err
	}
	r := l.fan.run(ctx, checkScript.cmd(judgePTTL, lockKeys(l).keys(), h.arg).asVote(l.vote), true)
	spent := r.elapsed() + l.cfg.drift()
	positive := 0
	r.each(func(n *node, rep *reply) {
		if t := time.Duration(rep.value)*time.Millisecond - spent; rep.err == nil && t > 0 {
			times[n.index] = t
			positive++
		}
	})
	r.free()
	if positive >= l.cfg.quorum {
		return true, times, nil
	}
	if len(l.fan.nodes)-len(r.errs)-positive > len(l.fan.nodes)-l.cfg.quorum {
		l.lose(h, LossCheckRefused, fmt.Errorf("%w: lock %q is held on %d of %d nodes, quorum %d", ErrLockLost, l.name, positive, len(l.fan.nodes), l.cfg.quorum))
		return false, times, h.Err()
	}
	return false, times, r.failure("held", len(l.fan.nodes), l.cfg.quorum)
}

// Locked reports whether the lock is held: acquired, not released, and
// confirmed by CheckTimes on a quorum of nodes. It hides CheckTimes's
// error: false means "not known to be held", whether the lock was never
// acquired, was released or lost, the factory closed, or too few nodes
// answered; call CheckTimes to tell these apart.
func (l *Lock) Locked(ctx context.Context) bool {
	held, _, _ := l.CheckTimes(ctx)
	return held
}
