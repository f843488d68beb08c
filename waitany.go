package redlock

import (
	"context"
	"math/rand/v2"
	"reflect"
	"time"
)

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
