package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// contender is what the acquire loop needs of a primitive: every
// primitive's Acquire runs through acquire, and says only how one attempt
// goes, so that retries, waits, observer events and errors are the same.
type contender interface {
	// lead gives the configuration, the factory and the observer.
	lead() *Lock
	// enter begins an Acquire: it fails when one is under way or the
	// primitive is held. leave ends it.
	enter() error
	leave()
	// try makes one attempt and, when it wins, starts the holding and
	// returns the end of its validity on monotonic().
	try(ctx context.Context) (time.Duration, tally, error)
	// waitFor lists the locks whose announced release wakes a blocked
	// Acquire; nil: the lead's alone.
	waitFor() []*Lock
	// keyTTL: the lead key's PTTL says when the primitive may be free.
	keyTTL() bool
}

// tally counts one attempt's round, for the pause and the observer.
type tally struct{ oks, noes, errs int }

// tallyOf counts round r.
func tallyOf(r *round) tally { return tally{oks: r.oks, noes: r.noes, errs: len(r.errs)} }

// errAcquireClosed ends an Acquire once the factory closes.
var errAcquireClosed = wrapf("%w: %w", ErrNotAcquired, ErrClosed)

// acquire runs c's attempts until one wins, maxAttempts (0: unlimited) are
// spent, ctx ends or the factory closes, and tells c's observer (named
// name) how it went. It returns the validity left at its return.
func acquire(ctx context.Context, c contender, name string, maxAttempts int) (time.Duration, error) {
	until, err := acquireUntil(ctx, c, name, maxAttempts)
	if err != nil {
		return 0, err
	}
	return validityLeft(until), nil
}

// validityLeft is what an acquisition returns: the validity left now of a
// holding valid until until (monotonic()). It counts from the return, not
// from the round's decision, so that whatever ran in between (starting
// the holding, the observer, the scheduler) comes off it and a caller who
// adds it to the time it reads next never counts past the keys' expiry.
// It is 0 when the validity ran out before the return; the holding's
// expiry ends it then.
func validityLeft(until time.Duration) time.Duration {
	return max(until-monotonic(), 0)
}

// acquireUntil is acquire returning the end of the won holding's validity
// on monotonic().
func acquireUntil(ctx context.Context, c contender, name string, maxAttempts int) (time.Duration, error) {
	l := c.lead()
	ob := l.obs
	if ob == nil {
		until, _, err := runAcquire(ctx, c, name, maxAttempts)
		return until, err
	}
	start := time.Now()
	if ob.AcquireStart != nil {
		ctx = ob.AcquireStart(ctx, name)
	}
	until, st, err := runAcquire(ctx, c, name, maxAttempts)
	e := AcquireEvent{Lock: name, Attempts: st.attempts, Waited: time.Since(start), Err: err}
	e.Outcome = l.outcome(ctx, err, &st)
	if ob.AcquireDone != nil {
		ob.AcquireDone(ctx, e)
	}
	if ob.log != nil {
		level := slog.LevelDebug
		if err != nil && e.Outcome != ContextEnded && e.Outcome != Closed {
			level = slog.LevelInfo
		}
		ob.log.Log(ctx, level, "redlock: acquire "+e.Outcome.String(), "lock", name, "attempts", e.Attempts, "waited", e.Waited, "err", err)
	}
	return until, err
}

// acquireStats is what the acquire loop tells its observer: the attempts
// made, and the last one's tally.
type acquireStats struct {
	attempts int
	last     tally
}

// runAcquire is acquire's loop; it returns the end of the validity, as
// try does.
func runAcquire(ctx context.Context, c contender, name string, maxAttempts int) (time.Duration, acquireStats, error) {
	var st acquireStats
	l := c.lead()
	if err := l.begin(ctx); err != nil {
		if errors.Is(err, ErrClosed) {
			return 0, st, errAcquireClosed
		}
		return 0, st, err
	}
	defer l.f.o.end()
	if err := c.enter(); err != nil {
		return 0, st, err
	}
	defer c.leave()
	w := newPauser(l, name, c.waitFor(), c.keyTTL())
	defer w.close()
	if maxAttempts == 0 {
		if err := w.joinQueue(ctx); err != nil {
			return 0, st, l.notAcquired(ctx, nil)
		}
	}
	var lastErr error
	for n := 1; ; n++ {
		if ctx.Err() != nil || l.f.o.closing() {
			return 0, st, l.notAcquired(ctx, lastErr)
		}
		w.beforeAttempt()
		until, t, err := c.try(ctx)
		st.attempts, st.last = n, t
		if err == nil || err == errAcquireClosed { // won, or won as Close began
			return until, st, err
		}
		if lastErr == nil || ctx.Err() == nil {
			// An attempt cut short by ctx says less than the one before it.
			lastErr = err
		}
		if maxAttempts > 0 && n >= maxAttempts {
			return 0, st, wrapf("%w after %d attempt(s): %w%s", ErrNotAcquired, n, lastErr, holderNote(ctx, c, t))
		}
		if err := w.pause(ctx, t); err != nil {
			return 0, st, l.notAcquired(ctx, lastErr)
		}
	}
}

// holderNote names what kept the lock out when a quorum refused the last
// attempt of a primitive that keeps one key: another client, and how long
// its key has left, read with one more round.
func holderNote(ctx context.Context, c contender, t tally) string {
	l := c.lead()
	if !c.keyTTL() || t.noes <= len(l.fan.nodes)-l.cfg.quorum {
		return ""
	}
	left, ok := l.freeIn(ctx)
	if !ok || left <= 0 {
		return ""
	}
	return fmt.Sprintf(" (held by another client, %v left unless extended)", left.Round(time.Millisecond))
}

// notAcquired is the error of an acquire ended by its context (matching
// ErrNotAcquired and ctx.Err()) or by the factory's Close.
func (l *Lock) notAcquired(ctx context.Context, last error) error {
	switch {
	case l.f.o.closing():
		return errAcquireClosed
	case last == nil:
		return wrapf("%w: %w", ErrNotAcquired, ctx.Err())
	}
	return wrapf("%w: %w (last attempt: %w)", ErrNotAcquired, ctx.Err(), last)
}

// outcome classifies an acquisition's error.
func (l *Lock) outcome(ctx context.Context, err error, st *acquireStats) AcquireOutcome {
	switch {
	case err == nil:
		return Acquired
	case errors.Is(err, ErrClosed):
		return Closed
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return ContextEnded
	case st.attempts == 0:
		return Invalid
	case st.last.errs > 0 && st.last.noes <= len(l.fan.nodes)-l.cfg.quorum:
		return NoQuorum
	}
	return Refused
}
