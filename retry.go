package redlock

import (
	"context"
	"math/rand/v2"
	"time"
)

// splitVoteShare is the share of the retry delay an attempt waits after it
// won some nodes but not a quorum: the lock looked free, contenders split
// the vote, and a short random pause lets one of them win.
const splitVoteShare = 20

// retryWaiter decides how long an Acquire pauses after a failed attempt.
// Without a waker it sleeps a random time in [0, retry delay]. With one, it
// sleeps until the holder's release is announced, falling back to that
// random time capped by the time the key has left to live.
type retryWaiter struct {
	l     *Lock
	w     *waker
	wt    *waiter   // nil until the first wait
	in    *interest // the interest wt is queued in
	stop  func()
	heard bool // the last wait ended with a release notification
	// blocked: the observer was told that this Acquire waits for a holder
	blocked bool
}

// block tells the observer, once, that the Acquire waits for a holder.
func (rw *retryWaiter) block() {
	if !rw.blocked && rw.l.obs != nil {
		rw.blocked = true
		rw.l.obs.waiting(1)
	}
}

func (l *Lock) newRetryWaiter() *retryWaiter {
	return &retryWaiter{l: l, w: l.f.wake}
}

// joinQueue makes a blocking Acquire that finds local waiters of its lock
// queue behind them before its first attempt, instead of barging in: the
// lock is contended, and the waiters before it are woken first.
func (rw *retryWaiter) joinQueue(ctx context.Context) error {
	if rw.w == nil || !rw.w.queued(rw.l.name) {
		return nil
	}
	rw.block()
	rw.wt, rw.in, rw.stop = rw.w.watch(rw.l.name)
	select {
	case <-rw.in.ready:
	default:
		return nil // the queue emptied meanwhile and this watch subscribed anew: attempt at once
	}
	rw.heard = true
	return rw.wait(ctx, rand.N(rw.l.cfg.retryDelay+1))
}

// beforeAttempt drops a wake-up that came before the attempt, which the
// attempt answers; one that comes while it is under way is kept.
func (rw *retryWaiter) beforeAttempt() {
	if rw.wt != nil {
		select {
		case <-rw.wt.wake:
		default:
		}
	}
}

// pause waits before the next attempt; it fails only when ctx ends.
func (rw *retryWaiter) pause(ctx context.Context, r round) error {
	rw.block()
	jitter := rand.N(rw.l.cfg.retryDelay + 1)
	switch {
	case rw.w == nil:
		return rw.l.sleep(ctx, jitter)
	case r.oks > 0: // a split vote, not a holder
		return rw.l.sleep(ctx, rand.N(rw.l.cfg.retryDelay/splitVoteShare+1))
	case rw.wt == nil:
		// Queue, and once the subscription is confirmed retry at once
		// unless it already was: a release between the failed attempt and
		// the subscription would go unheard, while one announced to an
		// existing queue woke the waiter before us, whose turn it is.
		rw.wt, rw.in, rw.stop = rw.w.watch(rw.l.name)
		select {
		case <-rw.in.ready:
			rw.heard = true // no need to ask the nodes on the first wait
		default:
			t := time.NewTimer(rw.l.cfg.nodeTimeout)
			defer t.Stop()
			select {
			case <-rw.in.ready:
			case <-t.C:
			case <-ctx.Done():
				return ctx.Err()
			case <-rw.l.f.o.dying:
				return ErrClosed
			}
			return nil
		}
	}
	// While notifications flow the holder is alive and will announce its
	// release; only a waiter that heard nothing last time pays for asking
	// the nodes how long the key has left, which caps its pause when the
	// holder vanished without a release.
	wait := jitter
	if !rw.heard {
		wait = min(jitter, rw.l.freeIn(ctx))
	}
	return rw.wait(ctx, wait)
}

// wait sleeps until the waiter is woken, d passes, or ctx ends. A waiter
// that is not first in a queue that moves keeps its place instead of trying
// out of turn when d passes.
func (rw *retryWaiter) wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-rw.wt.wake:
			rw.heard = true
			return nil
		case <-t.C:
			if rw.w.turnPending(rw.in, rw.wt, rw.l.cfg.retryDelay) {
				t.Reset(rand.N(rw.l.cfg.retryDelay + 1))
				continue
			}
			rw.heard = false
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-rw.l.f.o.dying:
			return ErrClosed
		}
	}
}

func (rw *retryWaiter) close() {
	if rw.stop != nil {
		rw.stop()
	}
	if rw.blocked {
		rw.l.obs.waiting(-1)
	}
}

// freeIn estimates how soon the lock's keys expire on a quorum of nodes:
// the longest PTTL among the first quorum of answers, or the retry delay
// when they do not come.
func (l *Lock) freeIn(ctx context.Context) time.Duration {
	r := l.fan.run(ctx, &command{name: "PTTL", args: []any{l.nameArg}, judge: judgeAny}, false)
	if !r.reached(l.cfg.quorum) {
		return l.cfg.retryDelay
	}
	var longest int64
	r.each(func(_ *node, rep *reply) {
		if rep.err == nil {
			longest = max(longest, rep.value)
		}
	})
	return time.Duration(longest) * time.Millisecond
}

// judgeAny accepts any integer reply.
func judgeAny(v any) reply {
	n, ok := v.(int64)
	return reply{ok: ok, value: n}
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
