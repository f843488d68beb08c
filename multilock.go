package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// MultiLock holds several names together, or none of them.
//
// On each node one script (lua/multi_set.lua) sets every name to the
// holding's token if none of them exists, and otherwise sets nothing, in
// the names' sorted order: no node ever stores a part of the set. Holding
// means a quorum of nodes granted every name in one round, with the
// validity of that round as for a Lock (TTL - elapsed - drift). Each name's
// key is then a Redlock of that name held by this token, so a MultiLock
// excludes a Lock, and every other MultiLock, naming any of its names: they
// use the same keys.
//
// There is one validity, one Extend (one script call per node, judged for
// the whole set) and one Done for the set. Autoextension extends every
// name in the extender's batch, one script call per node for all of them;
// when any name cannot be kept, the whole set is lost: Done closes, Err
// returns ErrLockLost and the other names are given up. A failed attempt
// deletes what it set on every node that did not refuse it.
//
// A blocked Acquire sleeps until the release of any of the names is
// announced, with the retry delay as backstop. A MultiLock is one holder,
// reusable after Release; its methods are safe for concurrent use.
type MultiLock struct {
	names   []string // sorted
	keys    []*Lock  // one per name, in names' order
	initErr error
	setArgs []any // the key count and keys, which every script of the set starts with

	mu        sync.Mutex
	acquiring bool
	set       *holding   // the set's holding: its Done, Err and token
	parts     []*holding // each name's holding, in names' order
}

// NewMultiLock returns a MultiLock of names over the factory's nodes, with
// the factory's defaults overridden by opts. No names, an empty name, a
// duplicate name, an invalid option or WithFencing(true) is an
// ErrInvalidArgument returned by every call.
func (f *Factory) NewMultiLock(names []string, opts ...Option) *MultiLock {
	m := &MultiLock{names: slices.Sorted(slices.Values(names))}
	switch {
	case len(names) == 0:
		m.initErr = invalidArg("multi-lock of no names")
	case m.names[0] == "":
		m.initErr = invalidArg("multi-lock: empty name")
	}
	for i, name := range m.names {
		if i > 0 && name == m.names[i-1] && m.initErr == nil {
			m.initErr = invalidArg("multi-lock: name %q given twice", name)
		}
		m.keys = append(m.keys, f.newLock(name, opts, true))
	}
	if len(m.keys) == 0 {
		m.keys = []*Lock{f.newLock("-", opts, true)} // calls report initErr
	}
	for _, l := range m.keys {
		if m.initErr == nil {
			m.initErr = l.initErr
		}
		if m.initErr == nil && l.cfg.fencing {
			// Fencing tokens come from the plain acquire, which the set's
			// script replaces.
			m.initErr = invalidArg("multi-lock: WithFencing is not supported")
		}
	}
	m.setArgs = append(m.setArgs, len(m.names))
	for _, name := range m.names {
		m.setArgs = append(m.setArgs, name)
	}
	return m
}

// Name returns the names joined by commas, in sorted order.
func (m *MultiLock) Name() string { return strings.Join(m.names, ",") }

// Names returns the names, in the fixed (sorted) order they are set.
func (m *MultiLock) Names() []string { return slices.Clone(m.names) }

// Token returns the token of the current or most recent holding, stored
// under every name.
func (m *MultiLock) Token() string {
	if h := m.holding(); h != nil {
		return h.token
	}
	return ""
}

// Done returns a channel closed when the holding of the set ends: Release,
// the loss of any name, or Factory.Close.
func (m *MultiLock) Done() <-chan struct{} {
	if h := m.holding(); h != nil {
		return h.Done()
	}
	return closedDone
}

// Err returns nil while held or after Release, an error matching
// ErrLockLost once any name was lost, and ErrClosed after Factory.Close.
func (m *MultiLock) Err() error {
	if h := m.holding(); h != nil {
		return h.Err()
	}
	return nil
}

func (m *MultiLock) holding() *holding {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.set
}

// Acquire blocks until every name is held or ctx ends; errors are those of
// Lock.Acquire.
func (m *MultiLock) Acquire(ctx context.Context) (time.Duration, error) {
	return m.acquire(ctx, 0)
}

// TryAcquire makes at most RetryTimes+1 attempts.
func (m *MultiLock) TryAcquire(ctx context.Context) (time.Duration, error) {
	return m.acquire(ctx, m.keys[0].cfg.retryTimes+1)
}

// acquire runs attempts until one succeeds, maxAttempts (0: unlimited) are
// spent, ctx ends or the factory closes.
func (m *MultiLock) acquire(ctx context.Context, maxAttempts int) (time.Duration, error) {
	if m.initErr != nil {
		return 0, m.initErr
	}
	first := m.keys[0]
	if err := beginOp(ctx, first); err != nil {
		return 0, err
	}
	defer first.f.o.end()
	if err := m.beginAcquire(); err != nil {
		return 0, err
	}
	defer m.endAcquire()
	return acquireLoop(ctx, first, m.keys, maxAttempts, m.attempt)
}

func (m *MultiLock) beginAcquire() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.acquiring:
		return invalidOp("multi-lock %q: an Acquire is already in progress", m.Name())
	case m.set != nil && m.set.live():
		return invalidOp("multi-lock %q is already held", m.Name())
	}
	m.acquiring = true
	return nil
}

func (m *MultiLock) endAcquire() {
	m.mu.Lock()
	m.acquiring = false
	m.mu.Unlock()
}

// attempt makes one attempt: the all-or-none script on every node at once,
// deciding at quorum. On success every name's Lock starts a holding of the
// token; a failed attempt's keys are discarded on every node that did not
// refuse.
func (m *MultiLock) attempt(ctx context.Context) (time.Duration, error) {
	first := m.keys[0]
	token := newToken()
	var arg any = token
	set := &command{script: multiSetScript, args: append(multiArgs(multiSetScript, m.setArgs), arg, first.ttlArg), judge: judgeOne, detached: true}
	r := first.fan.run(ctx, set, false)
	fin := r.fin
	validity := first.validity(r)
	if !r.reached(first.cfg.quorum) || validity <= 0 {
		m.discard(token, &r, fin)
		if r.reached(first.cfg.quorum) {
			return 0, fmt.Errorf("validity %v after %v is not positive", validity, r.elapsed())
		}
		return 0, r.detail("set every name", len(first.fan.nodes), first.cfg.quorum)
	}
	until := r.start.Add(first.cfg.ttl - first.cfg.drift())
	return validity, m.startHolding(token, arg, r.got, fin, until)
}

// discard deletes a failed attempt's keys through the nodes' cleaners, on
// every node that did not refuse: behind the attempt's own call, which is
// on the same connection (pipelined) or awaited (fin, other transports).
func (m *MultiLock) discard(token string, r *round, fin *finish) {
	first := m.keys[0]
	for i, n := range first.fan.nodes {
		if r.refused(i) {
			continue
		}
		uncertain := r.got&(1<<i) == 0 || r.slots[i].err != nil
		for _, l := range m.keys {
			n.cleaner.addBehind(discard{key: l.name, token: token, until: time.Now().Add(l.cfg.ttl)}, uncertain, fin)
		}
	}
}

// startHolding starts a holding of every name, and of the set over them:
// the loss of any name (or Close) ends the set and gives up the others.
func (m *MultiLock) startHolding(token string, arg any, counted uint64, fin *finish, until time.Time) error {
	set := &holding{token: token, arg: arg, counted: counted, fin: fin, validUntil: onMonotonic(until)}
	parts := make([]*holding, len(m.keys))
	for i := range m.keys {
		parts[i] = &holding{token: token, arg: arg, counted: counted, fin: fin, validUntil: onMonotonic(until), l: m.keys[i]}
	}
	m.mu.Lock()
	m.set, m.parts = set, parts
	m.mu.Unlock()
	var err error
	for i, l := range m.keys {
		if err == nil {
			err = l.startHolding(parts[i])
		} else {
			l.lose(parts[i], LossWithSet, err) // never registered: give its keys up
		}
		parts[i].afterEnd(func(cause error) {
			if cause != nil {
				m.lose(set, parts, cause)
			}
		})
	}
	return err
}

// lose ends the set with cause and gives up every name still held. On
// Close, the factory releases each name itself.
func (m *MultiLock) lose(set *holding, parts []*holding, cause error) {
	if !set.end(cause) || errors.Is(cause, ErrClosed) {
		return
	}
	for i, l := range m.keys {
		l.lose(parts[i], LossWithSet, cause)
	}
}

// current returns the live holding of the set and of its names, or the
// error for calls that need one.
func (m *MultiLock) current(op string) (*holding, []*holding, error) {
	if m.initErr != nil {
		return nil, nil, m.initErr
	}
	m.mu.Lock()
	set, parts := m.set, m.parts
	m.mu.Unlock()
	switch {
	case set == nil && m.keys[0].f.o.closing():
		return nil, nil, ErrClosed
	case set == nil:
		return nil, nil, invalidOp("%s of multi-lock %q before Acquire", op, m.Name())
	case set.Err() != nil:
		return nil, nil, set.Err()
	case !set.live():
		return nil, nil, invalidOp("%s of multi-lock %q after Release", op, m.Name())
	}
	return set, parts, nil
}

// multiArgs starts a command's arguments for script: its hash, then the
// key count and keys.
func multiArgs(s *script, keys []any) []any {
	return append([]any{s.hashArg}, keys...)
}

// manyArgs are the arguments of the *_many script s for every name: its
// hash, the key count, the names, then per name the token and extra (the
// TTL, or nothing).
func (m *MultiLock) manyArgs(s *script, arg any, extra ...any) []any {
	args := multiArgs(s, m.setArgs)
	for range m.keys {
		args = append(append(args, arg), extra...)
	}
	return args
}

// judgeAll accepts a reply of n integers and counts the node as yes iff
// every one is 1: the node did it for every name.
func judgeAll(n int) func(v any) reply {
	list := judgeList(n)
	return func(v any) reply {
		rep := list(v)
		if rep.err == nil {
			rep.ok = !slices.ContainsFunc(rep.raw.([]int64), func(x int64) bool { return x != 1 })
		}
		return rep
	}
}

// Extend resets the TTL of every name in one script call per node and
// returns the new validity. A node counts only if it extended every name.
// Errors are those of Lock.Extend; when a quorum refuses, the set is lost.
func (m *MultiLock) Extend(ctx context.Context) (time.Duration, error) {
	first := m.keys[0]
	if m.initErr != nil {
		return 0, m.initErr
	}
	if err := first.begin(ctx); err != nil {
		return 0, err
	}
	defer first.f.o.end()
	set, parts, err := m.current("Extend")
	if err != nil {
		return 0, err
	}
	bump := &command{script: extendManyScript, args: m.manyArgs(extendManyScript, set.arg, first.ttlArg), judge: judgeAll(len(m.keys))}
	r := first.fan.run(ctx, bump, false)
	validity := first.validity(r)
	if !r.reached(first.cfg.quorum) || validity <= 0 {
		err := r.failure("extend every name", len(first.fan.nodes), first.cfg.quorum)
		if errors.Is(err, ErrLockLost) {
			m.lose(set, parts, err)
		}
		return 0, err
	}
	until := r.start.Add(first.cfg.ttl - first.cfg.drift())
	for _, h := range parts {
		if err := h.extendTo(until); err != nil {
			return 0, errOr(set.Err(), invalidOp("multi-lock %q was released during Extend", m.Name()))
		}
	}
	return validity, nil
}

// Release deletes every name holding the token, in one script call per
// node, and wakes the local waiters of each name. It succeeds iff a quorum
// of nodes released every name; otherwise the error is as for
// Lock.Release, and the nodes that failed are retried in the background.
func (m *MultiLock) Release(ctx context.Context) error {
	if m.initErr != nil {
		return m.initErr
	}
	first := m.keys[0]
	m.mu.Lock()
	set, parts := m.set, m.parts
	m.mu.Unlock()
	switch {
	case set == nil && first.f.o.closing():
		return ErrClosed
	case set == nil:
		return invalidOp("Release of multi-lock %q before Acquire", m.Name())
	}
	if !set.end(errReleased) {
		return errOr(set.Err(), invalidOp("multi-lock %q released twice", m.Name()))
	}
	for i, l := range m.keys {
		l.endHolding(parts[i], errReleased)
		l.f.ext.unschedule(parts[i], true)
	}
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	del := &command{script: releaseManyScript, args: m.manyArgs(releaseManyScript, set.arg), judge: judgeAll(len(m.keys)), detached: true}
	r := first.fan.run(ctx, del, false)
	fifo := first.fan.nodes[0].tr.fifo()
	for i, n := range first.fan.nodes {
		answered := r.got&(1<<i) != 0 && r.slots[i].err == nil
		if answered && (fifo || set.counted&(1<<i) != 0) {
			continue // released, or refused: nothing of ours is there
		}
		// The delete failed or is still running, or on a pool connection
		// the attempt's own call may land after it.
		for _, l := range m.keys {
			n.cleaner.addBehind(l.discardOf(set), true, set.fin)
		}
	}
	for i, l := range m.keys {
		l.announce(parts[i])
	}
	if !r.reached(first.cfg.quorum) {
		return r.failure("released every name", len(first.fan.nodes), first.cfg.quorum)
	}
	return nil
}
