package redlock

import (
	"context"
	"sync"
	"time"
)

// minExtendRetry bounds how often a failing extension is retried.
const minExtendRetry = 5 * time.Millisecond

// maxExtendBatch bounds the keys of one batched extension script, so that
// one call never blocks a node for long.
const maxExtendBatch = 1000

// batchesInFlight is how many extension batches the loop sends at once: a
// pipelined connection writes them in one system call and reads their
// replies together, and each stays one script call of maxExtendBatch keys
// at most, between which the node serves its other clients. At a million
// held locks a wake takes over a hundred thousand, whose batches, sent one
// round trip after another, made a system call and a wake-up each.
const batchesInFlight = 4

// extender keeps held locks alive, and ends them when their validity runs
// out. One goroutine serves every autoextending lock of a Factory (or a
// lone Lock): it sleeps until the earliest extension is due, then extends
// all locks due by then with one script call per node, so the cost per
// held lock is a few bytes in a batch rather than a timer, a goroutine and
// a round trip. The goroutine is the owner's: a lone Lock's runs only
// while a lock is autoextended; a Factory's stays, asleep when idle, until
// Close stops it.
//
// Every live holding of the owner's locks, autoextended or not, is in one
// time queue (timequeue.go) by the end of its validity, under one runtime
// timer (time.AfterFunc) armed for the earliest: when it fires, the
// holdings whose validity ran out are lost. The autoextended ones are in a
// second, by when their next extension is due. The bookkeeping of both
// lives in the holdings themselves.
type extender struct {
	g   *nodeGroup
	o   *owner
	obs *observer // the factory's, for node errors of the batches

	mu        sync.Mutex
	idle      *sync.Cond // signalled when a batch is done
	held      timeQueue  // every live holding, by holding.expAt
	queue     timeQueue  // the autoextended holdings not in a batch in flight, by holding.at
	expiry    *time.Timer
	armed     time.Duration // when expiry fires, on monotonic(); 0: not armed
	extending int           // the holdings in held that are autoextended
	running   bool
	linger    bool          // keep the loop while idle (a factory's, until stop)
	wakeAt    time.Duration // when the sleeping loop wakes, on monotonic(); 0 while it works
	timer     *time.Timer   // the loop's alarm, set under mu
	kick      chan struct{}
	// The loop's own buffers, reused from one batch to the next so that a
	// hold of a million locks allocates next to nothing (each allocation
	// brings the collector's marking of every held lock nearer): taken
	// holds the batch that take returns; bufs the arguments and RESP of
	// each batch in flight; requeues the outcomes of the batch being
	// applied.
	taken    []*holding
	bufs     [batchesInFlight]batchBufs
	requeues []requeue
}

// requeue is what a batch's outcome asks of the extender's queues for one
// holding: to move its expiry when its validity moved (later), and to plan
// its next extension wait from now. The loop applies a batch's requeues
// under one lock.
type requeue struct {
	h         *holding
	later     bool          // the validity moved, to until
	until     time.Duration // on monotonic()
	now, wait time.Duration
}

// batchBufs are one in-flight batch's buffers: its extension arguments
// and their RESP, kept once every node answered the batch that used them,
// when no call reads them any more.
type batchBufs struct {
	args []any
	wire []byte
}

func newExtender(g *nodeGroup) *extender {
	e := &extender{g: g, o: g.o, kick: make(chan struct{}, 1), linger: true}
	e.timer = time.NewTimer(idleWake)
	e.timer.Stop()
	e.expiry = time.AfterFunc(idleWake, e.expire)
	e.expiry.Stop()
	e.idle = sync.NewCond(&e.mu)
	e.held = newTimeQueue(func(h *holding) time.Duration { return h.expAt }, func(h *holding) *int32 { return &h.pos }, func(h *holding) **[]*holding { return &h.expIn })
	e.queue = newTimeQueue(func(h *holding) time.Duration { return h.at }, func(h *holding) *int32 { return &h.qpos }, func(h *holding) **[]*holding { return &h.qIn })
	return e
}

// add puts a new holding, already registered with the owner, under the
// extender at now (monotonic()): into the expiry queue, and into the
// autoextension schedule when autoextend is on. A holding that ended
// meanwhile is left out.
func (e *extender) add(h *holding, autoextend bool, timeout, now time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.push(h, now) {
		return
	}
	if autoextend {
		e.scheduleLocked(h, timeout, now)
	}
}

// push puts h into the expiry queue unless it ended, and arms the expiry
// timer when h is now the earliest; it reports whether h is live.
func (e *extender) push(h *holding, now time.Duration) bool {
	h.mu.Lock()
	live, until := h.cause == nil, h.validUntil
	h.mu.Unlock()
	if !live {
		return false
	}
	h.expAt = until
	e.held.put(h)
	if e.armed == 0 || until < e.armed {
		e.armed = until
		e.expiry.Reset(until - now)
	}
	return true
}

// moved re-queues h for expiry after its validity was extended.
// The timer stays armed: if h was the earliest, it fires early, finds
// nothing due and arms again.
func (e *extender) moved(h *holding) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h.mu.Lock()
	until := h.validUntil
	h.mu.Unlock()
	e.movedLocked(h, until)
}

// movedLocked re-queues h for expiry at until, an end its validity has
// reached. A later move may pass it meanwhile: then the expiry timer finds
// h still valid at until, and puts it back at its end.
func (e *extender) movedLocked(h *holding, until time.Duration) {
	if !e.held.queued(h) {
		return // ended, or being looked at by expire, which reads the new validity
	}
	e.held.remove(h)
	h.expAt = until
	e.held.put(h)
}

// drop takes an ended holding out of the expiry queue and the schedule,
// without waiting for a batch in flight.
func (e *extender) drop(h *holding) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.held.remove(h)
	e.stopExtending(h)
}

// expire is the expiry timer's function: it loses the holdings whose
// validity ran out and arms the timer for the next.
func (e *extender) expire() {
	e.mu.Lock()
	e.armed = 0
	now := monotonic()
	due := e.held.popDue(nil, func(h *holding) bool { return h.expAt <= now }, nil)
	e.rearm()
	e.mu.Unlock()
	for _, h := range due {
		if !h.l.expire(h) {
			// Extended since its expAt was read: back in, at its new
			// end, and into the loop's view, which may have missed it.
			e.mu.Lock()
			now := monotonic()
			if e.push(h, now) && h.extending {
				e.alarm(h, now)
			}
			e.mu.Unlock()
		}
	}
}

// rearm arms the expiry timer for the earliest holding, if any.
func (e *extender) rearm() {
	if b := e.held.first(); b != nil {
		e.armed = e.held.earliest(b)
		e.expiry.Reset(e.armed - monotonic())
	}
}

// schedule starts (or restarts) autoextension of holding h.
func (e *extender) schedule(h *holding, timeout time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if h.pos != 0 {
		e.scheduleLocked(h, timeout, monotonic())
	}
}

func (e *extender) scheduleLocked(h *holding, timeout, now time.Duration) {
	h.until = 0
	if timeout > 0 {
		h.until = now + timeout
	}
	e.queue.remove(h) // its time changes
	h.plan(now, h.remainingAt(now)*3/4)
	e.queue.put(h)
	if !h.extending {
		h.extending = true
		e.extending++
	}
	if !e.running {
		e.running = e.o.spawn(e.loop) // refused only once the owner closed
		return
	}
	e.alarm(h, now)
}

// alarm moves the sleeping loop's alarm to h's extension when that is due
// before the loop wakes, without waking it now (monotonic()).
func (e *extender) alarm(h *holding, now time.Duration) {
	if e.wakeAt != 0 && h.at < e.wakeAt {
		e.wakeAt = h.at
		e.timer.Reset(h.at - now)
	}
}

// stopExtending takes h out of the autoextension schedule.
func (e *extender) stopExtending(h *holding) {
	if !h.extending {
		return
	}
	h.extending = false
	e.extending--
	e.queue.remove(h)
	if e.extending == 0 && !e.linger {
		e.wake() // let the loop end
	}
}

// unschedule stops autoextension of h. With wait, it also waits for a batch
// in flight that extends h, so that no extension follows the call.
func (e *extender) unschedule(h *holding, wait bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopExtending(h)
	for wait && h.busy {
		e.idle.Wait()
	}
}

// wake interrupts the loop's sleep so that it looks at the schedule again:
// it ends when nothing is autoextended.
func (e *extender) wake() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// plan sets the next extension to wait from now (monotonic()).
func (h *holding) plan(now, wait time.Duration) {
	h.at = now + wait
	h.slack = wait / 8
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
			e.wakeAt = 0
			e.mu.Unlock()
			continue
		}
		for start := 0; start < len(batch); start += maxExtendBatch * batchesInFlight {
			e.extend(batch[start:min(start+maxExtendBatch*batchesInFlight, len(batch))])
		}
		e.mu.Lock()
		for _, h := range batch {
			h.busy = false
		}
		e.idle.Broadcast()
		e.mu.Unlock()
		clear(batch)
		e.taken = batch[:0]
	}
}

// idleWake is how long an idle lingering loop sleeps unless kicked.
const idleWake = time.Hour

// take returns the holdings whose extension is due now (marked busy, and
// out of the queue until reschedule puts them back), or, when none is,
// sets the loop's alarm for the next; empty means nothing is autoextended
// and the loop has ended. A lingering loop does not end: it sleeps until
// kicked or until a new extension moves its alarm. The loop wakes when the
// first extension is due and takes, bucket by bucket in order of due time,
// every holding due within its slack, up to the first bucket that keeps
// one that is not, so that one batch carries the extensions of a stretch
// of time; a holding past its autoextension timeout is let go.
func (e *extender) take() (batch []*holding, empty bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := monotonic()
	var next time.Duration
	overdue := func(h *holding) bool { return h.until != 0 && h.at > h.until }
	due := e.queue.popDue(e.taken[:0], func(h *holding) bool { return h.at <= now+h.slack || overdue(h) }, func(h *holding) {
		if next == 0 || h.at < next {
			next = h.at
		}
	})
	batch = due[:0]
	for _, h := range due {
		if overdue(h) {
			e.stopExtending(h) // autoextend timeout: let it expire
			continue
		}
		h.busy = true
		batch = append(batch, h)
	}
	switch {
	case len(batch) > 0:
		return batch, false
	case e.extending == 0 && !e.linger:
		e.running = false
		return nil, true
	case next == 0: // nothing queued: sleep until kicked or alarmed
		next = now + idleWake
	}
	e.wakeAt = next
	e.timer.Reset(next - now)
	return nil, false
}

// stop ends a lingering loop once nothing is scheduled, and the expiry
// timer: Close has ended every holding.
func (e *extender) stop() {
	e.mu.Lock()
	e.linger = false
	e.expiry.Stop()
	e.mu.Unlock()
	e.wake()
}

// extend sends the holdings to every node in batches of maxExtendBatch at
// most, all at once, and applies the outcome per lock. It waits for the
// last batch first: on a pipelined connection its replies come after the
// others', so the loop wakes once for all of them rather than once per
// batch (each wake-up of a goroutine, and of the thread that runs it, was
// a part of the client's CPU at a million held locks).
func (e *extender) extend(holdings []*holding) {
	var rounds [batchesInFlight]round
	var cmds [batchesInFlight]*command
	var fans [batchesInFlight]fanout
	n := 0
	for start := 0; start < len(holdings); start += maxExtendBatch {
		batch := holdings[start:min(start+maxExtendBatch, len(holdings))]
		fans[n], cmds[n] = e.batchCmd(batch, &e.bufs[n])
		n++
	}
	fans[0].sendAll(context.Background(), cmds[:n], rounds[:n])
	for k := n - 1; k >= 0; k-- {
		fans[k].wait(context.Background(), &rounds[k], true)
	}
	for k := range n {
		r := &rounds[k]
		now := onMonotonic(r.decided) // the batch's next extensions count from its end: one clock reading for all
		var order [maxNodes]uint8
		byArrival := r.byArrival(order[:0])
		for i, h := range holdings[k*maxExtendBatch : min((k+1)*maxExtendBatch, len(holdings))] {
			e.apply(h, r, byArrival, i, now)
		}
		e.requeueAll()
		e.bufs[k] = batchBufs{}
		if r.late == 0 { // every call delivered: none reads the arguments or their RESP now
			clear(cmds[k].args)
			e.bufs[k] = batchBufs{args: cmds[k].args[:0], wire: cmds[k].enc.buf[:0]}
		}
		r.free()
	}
}

// batchCmd builds the extension command of batch in bufs, and the round
// that sends it: its node timeout and vote rule are the strictest of the
// batch's locks.
func (e *extender) batchCmd(batch []*holding, bufs *batchBufs) (fanout, *command) {
	var nodeTimeout time.Duration
	var rule voteRule
	cmd := extendManyCmd(bufs.args, judgeFlags(len(batch)), len(batch), func(i int) (any, any, any) {
		h := batch[i]
		nodeTimeout = max(nodeTimeout, h.l.cfg.nodeTimeout)
		rule.tighten(h.l.vote)
		return h.l.nameArg, h.arg, h.l.ttlArg
	})
	if batch[0].l.vote != nil { // the guard's options are the factory's: on for all or none
		cmd.asVote(&rule)
	}
	cmd.encodeOnce(bufs.wire)
	return e.g.fan(len(e.g.nodes), nodeTimeout, e.obs), cmd
}

// apply reads lock i's outcome from a batch round, whose counted nodes
// are byArrival in the order their replies came: extended when a quorum
// said yes in time, lost when a quorum said no, else retried soon. The
// order is the batch's, worked out once (round.byArrival): a sort per
// lock, in an array sized for the most nodes a round may have, was paid
// 44,000 times a second at a million held locks (BENCHMARKS.md, step 20).
func (e *extender) apply(h *holding, r *round, byArrival []uint8, i int, now time.Duration) {
	l := h.l
	var yes, no int
	var quorumAt time.Duration // when the quorum-th yes came
	for _, j := range byArrival {
		switch rep := &r.slots[j]; {
		case rep.err != nil: // in r.errs
		case flagged(rep, i):
			if yes++; yes == l.cfg.quorum {
				quorumAt = r.arrived[j]
			}
		default:
			no++
		}
	}
	if yes >= l.cfg.quorum {
		// The lock's validity counts to the quorum-th yes, as for one lock.
		validity := l.cfg.validityAt(r.start, r.start.Add(quorumAt))
		if validity > 0 {
			until := onMonotonic(l.cfg.validUntil(r.start))
			if later, err := h.moveEnd(until); err == nil {
				l.obs.extended(l.name, true, nil)
				e.requeues = append(e.requeues, requeue{h: h, later: later, until: until, now: now, wait: validity * 3 / 4})
				return
			}
		}
	}
	sub := round{oks: yes, noes: no, errs: r.errs}
	if !h.live() {
		return // released or lost meanwhile; drop took it out
	}
	err := sub.failure("extend", len(e.g.nodes), l.cfg.quorum)
	if sub.refusedByQuorum(len(e.g.nodes), l.cfg.quorum) {
		l.lose(h, LossExtendRefused, err)
		l.obs.extended(l.name, true, err)
		return
	}
	l.obs.extended(l.name, true, err) // retried while the validity lasts
	e.requeues = append(e.requeues, requeue{h: h, now: now, wait: max(h.remainingAt(now)/4, minExtendRetry)})
}

// requeueAll applies the requeues of a batch under one lock, as a million
// held locks are extended at 44,000 a second, and forgets them.
func (e *extender) requeueAll() {
	e.mu.Lock()
	for _, q := range e.requeues {
		if q.later {
			e.movedLocked(q.h, q.until)
		}
		e.rescheduleLocked(q.h, q.now, q.wait)
	}
	e.mu.Unlock()
	clear(e.requeues)
	e.requeues = e.requeues[:0]
}

// rescheduleLocked plans h's next extension, wait from now, unless it was
// unscheduled meanwhile.
func (e *extender) rescheduleLocked(h *holding, now, wait time.Duration) {
	if h.extending {
		e.queue.remove(h) // queued again by a StartAutoextend while in flight
		h.plan(now, wait)
		e.queue.put(h)
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
	l.f.ext.schedule(h, timeout)
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
