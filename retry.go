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
	l    *Lock
	w    *waker
	in   *interest
	stop func()
	sig  <-chan struct{} // the release signal as it was before the attempt
}

func (l *Lock) newRetryWaiter() *retryWaiter {
	rw := &retryWaiter{l: l}
	if l.owner != nil {
		rw.w = l.owner.wake
	}
	return rw
}

// beforeAttempt takes the release signal before an attempt is sent, so that
// a release announced while the attempt is under way is not missed.
func (rw *retryWaiter) beforeAttempt() {
	if rw.in != nil {
		rw.sig = rw.w.next(rw.in)
	}
}

// pause waits before the next attempt; it fails only when ctx ends.
func (rw *retryWaiter) pause(ctx context.Context, r round) error {
	jitter := rand.N(rw.l.cfg.retryDelay + 1)
	switch {
	case rw.w == nil:
		return sleepCtx(ctx, jitter)
	case r.oks > 0: // a split vote, not a holder
		return sleepCtx(ctx, rand.N(rw.l.cfg.retryDelay/splitVoteShare+1))
	case rw.in == nil:
		// Subscribe, and retry at once when a node confirmed: a release
		// before the subscription took effect would go unheard.
		rw.in, rw.stop = rw.w.watch(rw.l.name)
		t := time.NewTimer(rw.l.cfg.nodeTimeout)
		defer t.Stop()
		select {
		case <-rw.in.ready:
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
	wait := min(jitter, rw.l.freeIn(ctx))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-rw.sig:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

func (rw *retryWaiter) close() {
	if rw.stop != nil {
		rw.stop()
	}
}

// freeIn estimates how soon the lock's keys expire on a quorum of nodes:
// the longest PTTL among the first quorum of answers, or the retry delay
// when they do not come.
func (l *Lock) freeIn(ctx context.Context) time.Duration {
	r := l.fan.run(ctx, nodeCmd{name: "PTTL", args: []any{l.name}, judge: judgeAny}, false, nil)
	if !r.reached(l.cfg.quorum) {
		return l.cfg.retryDelay
	}
	var longest int64
	for _, rep := range r.replies {
		if rep.err == nil {
			longest = max(longest, rep.value)
		}
	}
	return time.Duration(longest) * time.Millisecond
}

// judgeAny accepts any integer reply.
func judgeAny(v any) reply {
	n, ok := v.(int64)
	return reply{ok: ok, value: n}
}
