package redlock

import (
	"context"
	"errors"
	"time"
)

// autoextender is the one goroutine that keeps a holding alive. It is owned
// by the Lock (and registered with its Factory), stopped by Release,
// StopAutoextend, a detected loss or Factory.Close, and every stop waits
// for it to exit.
type autoextender struct {
	ctx    context.Context // cancelled to stop it; also aborts an extension in flight
	cancel context.CancelFunc
	exited chan struct{}
}

func (a *autoextender) signalStop() { a.cancel() }

// minExtendRetry bounds how often a failing extension is retried.
const minExtendRetry = 5 * time.Millisecond

// StartAutoextend starts extending the held lock in the background at 3/4 of
// its remaining validity, until Release, StopAutoextend or, when timeout is
// positive, until timeout has passed (the lock then expires at the end of its
// last validity). It replaces an autoextender already running. A transient
// failure is retried while the validity lasts; when the lock cannot be kept,
// Done is closed and Err returns ErrLockLost. It fails with
// ErrInvalidOperation when the lock is not held.
func (l *Lock) StartAutoextend(timeout time.Duration) error {
	if timeout < 0 {
		return invalidArg("autoextend timeout %v is negative", timeout)
	}
	h, err := l.current("StartAutoextend")
	if err != nil {
		return err
	}
	return l.startAutoextend(h, timeout)
}

// StopAutoextend stops automatic extension and waits for the goroutine to
// exit. The lock stays held until its validity runs out or Release. It does
// nothing when no autoextender runs.
func (l *Lock) StopAutoextend() {
	l.mu.Lock()
	h := l.cur
	l.mu.Unlock()
	if h != nil {
		l.stopAutoextend(h)
	}
}

func (l *Lock) startAutoextend(h *holding, timeout time.Duration) error {
	l.stopAutoextend(h)
	ctx, cancel := context.WithCancel(context.Background())
	a := &autoextender{ctx: ctx, cancel: cancel, exited: make(chan struct{})}
	l.mu.Lock()
	if h.ended {
		l.mu.Unlock()
		return invalidOp("StartAutoextend of lock %q: the lock is no longer held", l.name)
	}
	h.ext = a
	l.mu.Unlock()
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		defer close(a.exited)
		l.autoextend(h, a, timeout)
	}()
	return nil
}

// stopAutoextend stops h's autoextender, if any, and waits for it.
func (l *Lock) stopAutoextend(h *holding) {
	l.mu.Lock()
	a := h.ext
	h.ext = nil
	l.mu.Unlock()
	if a == nil {
		return
	}
	a.signalStop()
	<-a.exited
}

// autoextend is the autoextender's loop.
func (l *Lock) autoextend(h *holding, a *autoextender, timeout time.Duration) {
	defer a.cancel()
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	wait := l.remaining(h) * 3 / 4
	for {
		t := time.NewTimer(wait)
		select {
		case <-a.ctx.Done():
			t.Stop()
			return
		case <-deadline:
			t.Stop()
			return
		case <-t.C:
		}
		_, err := l.extendHolding(a.ctx, h)
		switch {
		case err == nil:
			wait = l.remaining(h) * 3 / 4
		case errors.Is(err, ErrLockLost), errors.Is(err, ErrInvalidOperation), a.ctx.Err() != nil:
			return // lost (marked by extendHolding), released, or stopped
		default:
			// Transient: retry while the validity lasts; the expiry timer
			// declares the loss if it runs out first.
			if l.cfg.logger != nil {
				l.cfg.logger.Warn("redlock: extend failed, retrying", "lock", l.name, "err", err)
			}
			wait = max(l.remaining(h)/4, minExtendRetry)
		}
	}
}

// remaining is how long h's validity lasts from now.
func (l *Lock) remaining(h *holding) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Until(h.validUntil)
}
