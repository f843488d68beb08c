package redlock

import (
	"context"
	"math/rand/v2"
	"reflect"
	"time"
)

// splitVoteShare is the share of the retry delay an attempt waits after it
// won some nodes but not a quorum: the lock looked free, contenders split
// the vote, and a short random pause lets one of them win.
const splitVoteShare = 20

// pauser is how a blocked Acquire of any primitive pauses between
// attempts: a random time in [0, retry delay], or with a waker until the
// release of a watched lock is announced, with that random time (capped
// by the lead key's PTTL) as backstop.
type pauser struct {
	l      *Lock   // the lead lock: configuration, factory, observer
	name   string  // the primitive's name, for the observer
	watch  []*Lock // whose releases end a pause; nil: l's alone
	keyTTL bool    // a pause may ask how long l's key has left
	w      *waker

	wts   []*waiter   // nil until the first wait; one per watched lock
	ins   []*interest // the interests wts are queued in
	stops []func()
	heard bool // the last wait ended with a release notification
	// blocked: the observer was told that this Acquire waits for a holder
	blocked bool
}

func newPauser(l *Lock, name string, watch []*Lock, keyTTL bool) pauser {
	return pauser{l: l, name: name, watch: watch, keyTTL: keyTTL, w: l.f.wake}
}

// block tells the observer, once, that the Acquire waits for a holder.
func (p *pauser) block() {
	if !p.blocked && p.l.obs != nil {
		p.blocked = true
		p.l.obs.waiting(p.name, 1)
	}
}

// watched returns the locks whose releases end a pause.
func (p *pauser) watched() []*Lock {
	if p.watch == nil {
		return []*Lock{p.l}
	}
	return p.watch
}

// subscribe watches every watched lock's release channel.
func (p *pauser) subscribe() {
	for _, l := range p.watched() {
		wt, in, stop := p.w.watch(l.name)
		p.wts, p.ins, p.stops = append(p.wts, wt), append(p.ins, in), append(p.stops, stop)
	}
}

// ready reports whether every subscription is confirmed.
func (p *pauser) ready() bool {
	for _, in := range p.ins {
		select {
		case <-in.ready:
		default:
			return false
		}
	}
	return true
}

// joinQueue makes a blocking Acquire of one lock that finds local waiters
// of it queue behind them before its first attempt, instead of barging
// in: the lock is contended, and the waiters before it are woken first.
func (p *pauser) joinQueue(ctx context.Context) error {
	if p.w == nil || len(p.watch) > 1 || !p.w.queued(p.watched()[0].name) {
		return nil
	}
	p.block()
	p.subscribe()
	if !p.ready() {
		return nil // the queue emptied meanwhile and this watch subscribed anew: attempt at once
	}
	p.heard = true
	return p.wait(ctx, rand.N(p.l.cfg.retryDelay+1))
}

// beforeAttempt drops the wake-ups that came before the attempt, which the
// attempt answers; one that comes while it is under way is kept.
func (p *pauser) beforeAttempt() {
	for _, wt := range p.wts {
		select {
		case <-wt.wake:
		default:
		}
	}
}

// pause waits before the next attempt, given the last one's tally; it
// fails only when ctx ends or the factory closes.
func (p *pauser) pause(ctx context.Context, t tally) error {
	p.block()
	jitter := rand.N(p.l.cfg.retryDelay + 1)
	switch {
	case p.w == nil:
		return p.l.sleep(ctx, jitter)
	case t.oks > 0: // a split vote, not a holder
		return p.l.sleep(ctx, rand.N(p.l.cfg.retryDelay/splitVoteShare+1))
	case p.wts == nil:
		// Queue, and once the subscriptions are confirmed retry at once
		// unless they already were: a release between the failed attempt
		// and the subscription would go unheard, while one announced to an
		// existing queue woke the waiter before us, whose turn it is.
		p.subscribe()
		if p.ready() {
			p.heard = true // no need to ask the nodes on the first wait
			break
		}
		return p.awaitReady(ctx)
	}
	// While notifications flow the holder is alive and will announce its
	// release; only a waiter that heard nothing last time pays for asking
	// the nodes how long the key has left, which caps its pause when the
	// holder vanished without a release.
	wait := jitter
	if !p.heard && p.keyTTL {
		if left, ok := p.l.freeIn(ctx); ok {
			wait = min(jitter, left)
		}
	}
	return p.wait(ctx, wait)
}

// awaitReady waits until every subscription is confirmed, at most one
// node timeout.
func (p *pauser) awaitReady(ctx context.Context) error {
	t := time.NewTimer(p.l.cfg.nodeTimeout)
	defer t.Stop()
	for _, in := range p.ins {
		select {
		case <-in.ready:
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-p.l.f.o.dying:
			return ErrClosed
		}
	}
	return nil
}

// wait sleeps until a watched release is heard, d passes, or ctx ends. A
// waiter of one lock that is not first in a queue that moves keeps its
// place instead of trying out of turn when d passes. The wake channels are
// known only at run time, so they are selected with reflect.Select rather
// than with a goroutine each.
func (p *pauser) wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	cases := make([]reflect.SelectCase, 0, len(p.wts)+3)
	for _, c := range []any{t.C, ctx.Done(), p.l.f.o.dying} {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
	}
	for _, wt := range p.wts {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(wt.wake)})
	}
	for {
		switch i, _, _ := reflect.Select(cases); i {
		case 0:
			if len(p.wts) == 1 && p.w.turnPending(p.ins[0], p.wts[0], p.l.cfg.retryDelay) {
				t.Reset(rand.N(p.l.cfg.retryDelay + 1))
				continue
			}
			p.heard = false
		case 1:
			return ctx.Err()
		case 2:
			return ErrClosed
		default:
			p.heard = true
		}
		return nil
	}
}

func (p *pauser) close() {
	for _, stop := range p.stops {
		stop()
	}
	if p.blocked {
		p.l.obs.waiting(p.name, -1)
	}
}

// freeIn estimates how soon the lock's keys expire on a quorum of nodes:
// the longest PTTL among the first quorum of answers; ok is false when
// they do not come.
func (l *Lock) freeIn(ctx context.Context) (left time.Duration, ok bool) {
	r := l.fan.run(ctx, plainCmd(judgeAny, "PTTL", l.nameArg), false)
	defer r.free()
	if !r.reached(l.cfg.quorum) {
		return 0, false
	}
	var longest int64
	r.each(func(_ *node, rep *reply) {
		if rep.err == nil {
			longest = max(longest, rep.value)
		}
	})
	return time.Duration(longest) * time.Millisecond, true
}

// sleep waits for d, or until ctx ends or the factory closes.
func (l *Lock) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-l.f.o.dying:
		return ErrClosed
	}
}
