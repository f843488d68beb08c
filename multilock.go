package redlock

import (
	"context"
	"errors"
	"slices"
	"strings"
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
	keys    keySet   // one Lock per name, in names' order
	initErr error

	held             // cur is the set's holding: its Done, Err and token
	parts []*holding // each name's holding, in names' order, under held.mu
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
		m.keys.locks = append(m.keys.locks, f.newLock(name, opts, true))
	}
	if len(m.keys.locks) == 0 {
		m.keys.locks = []*Lock{f.newLock("-", opts, true)} // calls report initErr
	}
	for _, l := range m.keys.locks {
		if m.initErr == nil {
			m.initErr = l.initErr
		}
		if m.initErr == nil && l.cfg.fencing {
			// Fencing tokens come from the plain acquire, which the set's
			// script replaces.
			m.initErr = invalidArg("multi-lock: WithFencing is not supported")
		}
	}
	cfg := m.keys.lead().cfg
	m.keys.obs = newObserver(&cfg, m.Name())
	return m
}

// Name returns the names joined by commas, in sorted order.
func (m *MultiLock) Name() string { return strings.Join(m.names, ",") }

// Names returns the names, in the fixed (sorted) order they are set.
func (m *MultiLock) Names() []string { return slices.Clone(m.names) }

// Token returns the token of the current or most recent holding, stored
// under every name.
func (m *MultiLock) Token() string { return m.token() }

// Done returns a channel closed when the holding of the set ends: Release,
// the loss of any name, or Factory.Close.
func (m *MultiLock) Done() <-chan struct{} { return m.done() }

// Err returns nil while held or after Release, an error matching
// ErrLockLost once any name was lost, and ErrClosed after Factory.Close.
func (m *MultiLock) Err() error { return m.err() }

// Acquire blocks until every name is held or ctx ends; errors are those of
// Lock.Acquire.
func (m *MultiLock) Acquire(ctx context.Context) (time.Duration, error) {
	if m.initErr != nil {
		return 0, m.initErr
	}
	return acquire(ctx, m, m.Name(), 0)
}

// TryAcquire makes at most RetryTimes+1 attempts.
func (m *MultiLock) TryAcquire(ctx context.Context) (time.Duration, error) {
	if m.initErr != nil {
		return 0, m.initErr
	}
	return acquire(ctx, m, m.Name(), m.keys.lead().cfg.retryTimes+1)
}

// A MultiLock is a contender (acquire.go): its attempt sets every name,
// and the release of any name may free it.
func (m *MultiLock) lead() *Lock      { return m.keys.lead() }
func (m *MultiLock) waitFor() []*Lock { return m.keys.locks }
func (m *MultiLock) keyTTL() bool     { return false }

func (m *MultiLock) enter() error { return m.held.enter("multi-lock", m.Name()) }

// try makes one attempt: the all-or-none script on every node at once,
// deciding at quorum. On success every name's Lock starts a holding of the
// token.
func (m *MultiLock) try(ctx context.Context) (time.Duration, tally, error) {
	l := m.keys.lead()
	token := newToken()
	var arg any = token
	set := multiSetScript.cmd(judgeOne, m.keys.keys(), arg, l.ttlArg).asVote(l.vote)
	w, t, err := m.keys.attempt(ctx, set, arg, nil)
	if err != nil {
		return 0, t, err
	}
	return w.until, t, m.startHolding(arg, w)
}

// startHolding starts a holding of every name, and of the set over them:
// the loss of any name (or Close) ends the set and gives up the others.
func (m *MultiLock) startHolding(arg any, w won) error {
	set := &holding{arg: arg, counted: w.counted, fin: w.fin, validUntil: w.until, begun: monotonic()}
	parts := make([]*holding, len(m.keys.locks))
	for i := range parts {
		parts[i] = &holding{arg: arg, counted: w.counted, fin: w.fin, validUntil: w.until, l: m.keys.locks[i], inSet: true}
	}
	m.held.mu.Lock()
	m.cur, m.parts = set, parts
	m.held.mu.Unlock()
	var err error
	for i, l := range m.keys.locks {
		if err == nil {
			err = l.startHolding(parts[i])
		} else {
			l.lose(parts[i], LossWithSet, err) // never registered: give its keys up
		}
		part := parts[i]
		part.afterEnd(func(cause error) {
			if cause != nil {
				m.lose(set, parts, part.why, cause)
			}
		})
	}
	return err
}

// lose ends the set with cause, found as why, tells the observer and gives
// up every name still held. On Close, the factory releases each name
// itself.
func (m *MultiLock) lose(set *holding, parts []*holding, why LossCause, cause error) {
	if !set.end(cause) || errors.Is(cause, ErrClosed) {
		return
	}
	m.keys.obs.lost(m.Name(), set, why, cause)
	for i, l := range m.keys.locks {
		l.lose(parts[i], LossWithSet, cause)
	}
}

// current returns the live holding of the set and of its names, or the
// error for calls that need one.
func (m *MultiLock) current(op string) (*holding, []*holding, error) {
	if m.initErr != nil {
		return nil, nil, m.initErr
	}
	m.held.mu.Lock()
	set, parts := m.cur, m.parts
	m.held.mu.Unlock()
	set, err := liveFor(set, op, "multi-lock", m.Name(), m.keys.lead().f.o.closing())
	return set, parts, err
}

// Extend resets the TTL of every name in one script call per node and
// returns the new validity. A node counts only if it extended every name.
// Errors are those of Lock.Extend; when a quorum refuses, the set is lost.
func (m *MultiLock) Extend(ctx context.Context) (time.Duration, error) {
	if m.initErr != nil {
		return 0, m.initErr
	}
	l := m.keys.lead()
	if err := l.begin(ctx); err != nil {
		return 0, err
	}
	defer l.f.o.end()
	set, parts, err := m.current("Extend")
	if err != nil {
		return 0, err
	}
	return m.keys.extend(ctx, set, parts)
}

// Release deletes every name holding the token, in one script call per
// node, and wakes the local waiters of each name. It succeeds iff a quorum
// of nodes released each name; otherwise the error is as for
// Lock.Release, and the nodes that failed are retried in the background.
func (m *MultiLock) Release(ctx context.Context) error {
	if m.initErr != nil {
		return m.initErr
	}
	m.held.mu.Lock()
	set, parts := m.cur, m.parts
	m.held.mu.Unlock()
	switch {
	case set == nil && m.keys.lead().f.o.closing():
		return ErrClosed
	case set == nil:
		return invalidOp("Release of multi-lock %q before Acquire", m.Name())
	}
	if !set.end(errReleased) {
		return errOr(set.Err(), invalidOp("multi-lock %q released twice", m.Name()))
	}
	return m.keys.releaseHeld(ctx, set, parts)
}
