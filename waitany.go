package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"time"
)

// acquireLoop runs attempts until one succeeds, maxAttempts (0: unlimited)
// are spent, ctx ends or the factory closes; between attempts it sleeps
// until the release of any of watch is announced. first gives the retry
// settings and the owner. The caller has begun the operation.
func acquireLoop(ctx context.Context, first *Lock, watch []*Lock, maxAttempts int, attempt func(context.Context) (time.Duration, error)) (time.Duration, error) {
	wait := &anyWaiter{locks: watch}
	defer wait.close()
	var lastErr error
	for n := 1; ; n++ {
		if ctx.Err() != nil || first.f.o.closing() {
			return 0, first.notAcquired(ctx, lastErr)
		}
		wait.drain()
		v, err := attempt(ctx)
		if err == nil || errors.Is(err, ErrClosed) {
			return v, err
		}
		if lastErr == nil || ctx.Err() == nil {
			lastErr = err // an attempt cut short by ctx says less
		}
		if maxAttempts > 0 && n >= maxAttempts {
			return 0, fmt.Errorf("%w after %d attempt(s): %w", ErrNotAcquired, n, lastErr)
		}
		if err := wait.pause(ctx); err != nil {
			return 0, first.notAcquired(ctx, lastErr)
		}
	}
}

// beginOp begins an operation of first's factory, as Lock.acquire does.
func beginOp(ctx context.Context, first *Lock) error {
	err := first.begin(ctx)
	if errors.Is(err, ErrClosed) {
		return errAcquireClosed
	}
	return err
}

// anyWaiter makes a blocked acquire of several locks (a Semaphore's slots,
// a MultiLock's names) sleep between attempts until the release of any of
// them is announced, through the factory's waker: it watches the channel
// of each.
type anyWaiter struct {
	locks []*Lock
	wts   []*waiter
	stops []func()
}

// drain drops the wake-ups that came before a pass, which the pass answers.
func (sw *anyWaiter) drain() {
	for _, wt := range sw.wts {
		select {
		case <-wt.wake:
		default:
		}
	}
}

// pause waits before the next pass; it fails only when ctx ends or the
// factory closes.
func (sw *anyWaiter) pause(ctx context.Context) error {
	l := sw.locks[0]
	w := l.f.wake
	jitter := rand.N(l.cfg.retryDelay + 1)
	if w == nil {
		return l.sleep(ctx, jitter)
	}
	if sw.wts == nil {
		// Subscribe, then pass again at once: a release between the
		// failed pass and the subscription would go unheard.
		ready := make([]<-chan struct{}, len(sw.locks))
		for i, slot := range sw.locks {
			wt, in, stop := w.watch(slot.name)
			sw.wts, sw.stops, ready[i] = append(sw.wts, wt), append(sw.stops, stop), in.ready
		}
		return waitAll(ctx, l, ready)
	}
	return sw.wait(ctx, l, jitter)
}

// waitAll waits until every channel is closed, at most one node timeout.
func waitAll(ctx context.Context, l *Lock, chans []<-chan struct{}) error {
	t := time.NewTimer(l.cfg.nodeTimeout)
	defer t.Stop()
	for _, c := range chans {
		select {
		case <-c:
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-l.f.o.dying:
			return ErrClosed
		}
	}
	return nil
}

// wait sleeps until any slot's release is heard, d passes, or ctx ends.
// The slots' wake channels are many and known only at run time, so they
// are selected with reflect.Select rather than with a goroutine each.
func (sw *anyWaiter) wait(ctx context.Context, l *Lock, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	cases := make([]reflect.SelectCase, 0, len(sw.wts)+3)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(t.C)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(l.f.o.dying)})
	for _, wt := range sw.wts {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(wt.wake)})
	}
	switch i, _, _ := reflect.Select(cases); i {
	case 1:
		return ctx.Err()
	case 2:
		return ErrClosed
	}
	return nil // woken, or the backstop pause passed
}

func (sw *anyWaiter) close() {
	for _, stop := range sw.stops {
		stop()
	}
}
