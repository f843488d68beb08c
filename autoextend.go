package redlock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// minExtendRetry bounds how often a failing extension is retried.
const minExtendRetry = 5 * time.Millisecond

// maxExtendBatch bounds the keys of one batched extension script, so that
// one call never blocks a node for long.
const maxExtendBatch = 1000

// extender keeps held locks alive. One goroutine serves every autoextending
// lock of a Factory (or a lone Lock): it sleeps until the earliest extension
// is due, then extends all locks due by then with one script call per node,
// so the cost per held lock is a few bytes in a batch rather than a timer,
// a goroutine and a round trip. The goroutine is the owner's: a lone Lock's
// runs only while a lock is scheduled; a Factory's stays, asleep when idle,
// until Close stops it.
type extender struct {
	nodes []*node
	o     *owner

	mu      sync.Mutex
	idle    *sync.Cond // signalled when a batch is done
	items   map[*holding]*extension
	running bool
	linger  bool        // keep the loop while idle (a factory's, until stop)
	wakeAt  time.Time   // when the sleeping loop wakes; zero while it works
	timer   *time.Timer // the loop's alarm, set under mu
	kick    chan struct{}
}

// extension is one scheduled lock.
type extension struct {
	l     *Lock
	h     *holding
	at    time.Time // when the next extension is due
	slack time.Duration
	until time.Time // autoextension stops after this; zero: never
	busy  bool      // part of the batch in flight
}

func newExtender(nodes []*node, o *owner) *extender {
	e := &extender{nodes: nodes, o: o, items: map[*holding]*extension{}, kick: make(chan struct{}, 1), linger: true}
	e.timer = time.NewTimer(idleWake)
	e.timer.Stop()
	e.idle = sync.NewCond(&e.mu)
	return e
}

// schedule starts (or restarts) autoextension of holding h.
func (e *extender) schedule(l *Lock, h *holding, timeout time.Duration) {
	x := &extension{l: l, h: h}
	if timeout > 0 {
		x.until = time.Now().Add(timeout)
	}
	x.plan(h.remaining() * 3 / 4)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.items[h] = x
	switch {
	case !e.running:
		e.running = e.o.spawn(e.loop) // refused only once the owner closed
	case !e.wakeAt.IsZero() && x.at.Before(e.wakeAt):
		// Due before the loop wakes: move its alarm, without waking it now.
		e.wakeAt = x.at
		e.timer.Reset(time.Until(x.at))
	}
}

// unschedule stops autoextension of h. With wait, it also waits for a batch
// in flight that extends h, so that no extension follows the call.
func (e *extender) unschedule(h *holding, wait bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.items[h]
	if !ok {
		return
	}
	delete(e.items, h)
	if len(e.items) == 0 && !e.linger {
		e.wake() // let the loop end
	}
	for wait && x.busy {
		e.idle.Wait()
	}
}

// wake interrupts the loop's sleep so that it looks at the schedule again:
// it drops ended holdings and ends when none is left.
func (e *extender) wake() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// plan sets the next extension to wait from now.
func (x *extension) plan(wait time.Duration) {
	x.at = time.Now().Add(wait)
	x.slack = wait / 8
}

// loop is the extender's goroutine.
func (e *extender) loop() {
	defer e.timer.Stop()
	for {
		batch, empty := e.take()
		if empty {
			return
		}
		if len(batch) == 0 {
			select {
			case <-e.timer.C:
			case <-e.kick:
			}
			e.mu.Lock()
			e.wakeAt = time.Time{}
			e.mu.Unlock()
			continue
		}
		for start := 0; start < len(batch); start += maxExtendBatch {
			e.extend(batch[start:min(start+maxExtendBatch, len(batch))])
		}
		e.mu.Lock()
		for _, x := range batch {
			x.busy = false
		}
		e.idle.Broadcast()
		e.mu.Unlock()
	}
}

// idleWake is how long an idle lingering loop sleeps unless kicked.
const idleWake = time.Hour

// take returns the extensions due now (marked busy), or, when none is,
// sets the loop's alarm for the next; empty means nothing is scheduled and
// the loop has ended. A lingering loop does not end: it sleeps until kicked
// or until a new extension moves its alarm.
func (e *extender) take() (batch []*extension, empty bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	var next time.Time
	for h, x := range e.items {
		if !h.live() || !x.until.IsZero() && x.at.After(x.until) {
			delete(e.items, h) // autoextend timeout: let it expire
			continue
		}
		if !x.at.After(now.Add(x.slack)) {
			x.busy = true
			batch = append(batch, x)
		} else if next.IsZero() || x.at.Before(next) {
			next = x.at
		}
	}
	if len(e.items) == 0 && len(batch) == 0 {
		if !e.linger {
			e.running = false
			return nil, true
		}
		next = now.Add(idleWake)
	}
	if len(batch) == 0 {
		e.wakeAt = next
		e.timer.Reset(next.Sub(now))
	}
	return batch, false
}

// stop ends a lingering loop once nothing is scheduled.
func (e *extender) stop() {
	e.mu.Lock()
	e.linger = false
	e.mu.Unlock()
	e.wake()
}

// extend sends one batch to every node and applies the outcome per lock.
func (e *extender) extend(batch []*extension) {
	args := make([]any, 0, 2+3*len(batch))
	args = append(args, extendManyScript.hashArg, len(batch))
	var nodeTimeout time.Duration
	for _, x := range batch {
		args = append(args, x.l.name)
		nodeTimeout = max(nodeTimeout, x.l.cfg.nodeTimeout)
	}
	for _, x := range batch {
		args = append(args, x.h.arg, x.l.ttlArg)
	}
	cmd := command{script: extendManyScript, args: args, judge: judgeList(len(batch))}
	fan := fanout{nodes: e.nodes, quorum: len(e.nodes), nodeTimeout: nodeTimeout, dying: e.o.dying}
	r := fan.run(context.Background(), &cmd, true)
	for i, x := range batch {
		e.apply(x, r, i)
	}
}

// apply reads lock i's outcome from a batch round: extended when a quorum
// said yes in time, lost when a quorum said no, else retried soon.
func (e *extender) apply(x *extension, r round, i int) {
	l, h := x.l, x.h
	var yes, no int
	var yesAt [maxNodes]time.Duration
	r.each(func(n *node, rep *reply) {
		switch {
		case rep.err != nil: // in r.errs
		case rep.raw.([]int64)[i] == 1:
			yesAt[yes] = r.arrived[n.index]
			yes++
		default:
			no++
		}
	})
	if yes >= l.cfg.quorum {
		// The lock's validity counts to the quorum-th yes, as for one lock.
		slices.Sort(yesAt[:yes])
		validity := l.cfg.ttl - yesAt[l.cfg.quorum-1] - l.cfg.drift()
		if validity > 0 && h.extendTo(r.start.Add(l.cfg.ttl-l.cfg.drift())) == nil {
			e.reschedule(x, validity*3/4)
			return
		}
	}
	sub := round{oks: yes, noes: no, errs: r.errs}
	if !h.live() {
		return // released or lost meanwhile; take drops it
	}
	if sub.refusedByQuorum(len(e.nodes), l.cfg.quorum) {
		l.lose(h, sub.failure("extend", len(e.nodes), l.cfg.quorum))
		return
	}
	if l.cfg.logger != nil {
		l.cfg.logger.Warn("redlock: extend failed, retrying", "lock", l.name, "err", sub.failure("extend", len(e.nodes), l.cfg.quorum))
	}
	e.reschedule(x, max(h.remaining()/4, minExtendRetry))
}

// reschedule plans x's next extension unless it was unscheduled meanwhile.
func (e *extender) reschedule(x *extension, wait time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.items[x.h] == x {
		x.plan(wait)
	}
}

// StartAutoextend starts extending the held lock in the background at 3/4 of
// its remaining validity, until Release, StopAutoextend or, when timeout is
// positive, until timeout has passed (the lock then expires at the end of its
// last validity). It replaces an autoextension already running. A transient
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
	l.f.ext.schedule(l, h, timeout)
	return nil
}

// StopAutoextend stops automatic extension and waits for an extension in
// flight. The lock stays held until its validity runs out or Release. It
// does nothing when the lock is not being autoextended.
func (l *Lock) StopAutoextend() {
	if h := l.holding(); h != nil {
		l.f.ext.unschedule(h, true)
	}
}
