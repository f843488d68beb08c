package redlock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// RLock is a reentrant Lock: the holder may acquire it again, and only the
// Release matching the first Acquire releases it on the nodes. The hold count
// lives in this object, so nesting is meant for one holder (one goroutine or
// one logical task), as with redlock_plus's RLock. RLocks do not autoextend
// by default.
type RLock struct {
	lock *Lock

	mu    sync.Mutex // serialises Acquire and Release so the count matches the nodes
	count int
	h     *holding // the holding the count belongs to
}

// NewRLock creates an RLock named name over nodes; see NewLock for the
// errors.
func NewRLock(name string, nodes []Pool, opts ...Option) (*RLock, error) {
	f, err := newPrivateFactory(nodes, opts)
	if err != nil {
		return nil, err
	}
	l := f.newLock(name, opts, false)
	return &RLock{lock: l}, l.initErr
}

// Name returns the lock's name.
func (r *RLock) Name() string { return r.lock.Name() }

// Token returns the token of the current or most recent holding.
func (r *RLock) Token() string { return r.lock.Token() }

// Done is closed when the holding ends; see Lock.Done.
func (r *RLock) Done() <-chan struct{} { return r.lock.Done() }

// Err reports why the holding ended; see Lock.Err.
func (r *RLock) Err() error { return r.lock.Err() }

// Level returns the hold count: 0 when not held.
func (r *RLock) Level() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

// Acquire acquires the lock (blocking, as Lock.Acquire) when it is not held,
// and otherwise re-checks it with CheckTimes and increments the hold count.
// A nested Acquire that finds the lock gone returns an error matching
// ErrLockLost and leaves the count unchanged. It returns the validity.
func (r *RLock) Acquire(ctx context.Context) (time.Duration, error) {
	return r.enter(ctx, r.lock.Acquire)
}

// TryAcquire is Acquire with at most RetryTimes+1 attempts for the first
// level.
func (r *RLock) TryAcquire(ctx context.Context) (time.Duration, error) {
	return r.enter(ctx, r.lock.TryAcquire)
}

// AcquireOrExtend extends the lock when held and acquires it otherwise; in
// both cases it increments the hold count on success.
func (r *RLock) AcquireOrExtend(ctx context.Context) (time.Duration, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, err := r.lock.AcquireOrExtend(ctx)
	if err != nil {
		return 0, err
	}
	r.enterHolding()
	return v, nil
}

// enterHolding counts one more level of the lock's current holding; a new
// holding (the old one was lost and AcquireOrExtend acquired anew) starts
// at level 1.
func (r *RLock) enterHolding() {
	h := r.lock.holding()
	if h != r.h {
		r.h, r.count = h, 0
	}
	r.count++
}

// enter takes one more level, acquiring with first when the count is 0.
func (r *RLock) enter(ctx context.Context, first func(context.Context) (time.Duration, error)) (time.Duration, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count == 0 {
		v, err := first(ctx)
		if err != nil {
			return 0, err
		}
		r.enterHolding()
		return v, nil
	}
	held, times, err := r.lock.CheckTimes(ctx)
	if !held {
		return 0, wrapf("%w: nested Acquire of %q found the lock gone: %w", ErrLockLost, r.lock.name, errOr(err, ErrLockLost))
	}
	r.count++
	return quorumValidity(times, r.lock.cfg.quorum), nil
}

// errOr returns err, or fallback when err is nil.
func errOr(err, fallback error) error {
	if err == nil {
		return fallback
	}
	return err
}

// quorumValidity is how long a quorum of nodes still holds the key: the
// quorum-th largest remaining time.
func quorumValidity(times []time.Duration, quorum int) time.Duration {
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	return sorted[len(sorted)-quorum]
}

// Release decrements the hold count and releases the lock on the nodes when
// it reaches 0. Releasing an RLock that is not held is an
// ErrInvalidOperation.
func (r *RLock) Release(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count == 0 {
		if r.lock.initErr != nil {
			return r.lock.initErr
		}
		if r.lock.f.o.closing() {
			return ErrClosed
		}
		return invalidOp("Release of rlock %q that is not held", r.lock.name)
	}
	r.count--
	if r.count > 0 {
		return nil
	}
	return r.lock.Release(ctx)
}

// Extend extends the held lock; see Lock.Extend.
func (r *RLock) Extend(ctx context.Context) (time.Duration, error) { return r.lock.Extend(ctx) }

// CheckTimes reports the remaining time on every node; see Lock.CheckTimes.
func (r *RLock) CheckTimes(ctx context.Context) (bool, []time.Duration, error) {
	return r.lock.CheckTimes(ctx)
}

// Locked reports whether the lock is held and confirmed by a quorum.
func (r *RLock) Locked(ctx context.Context) bool { return r.lock.Locked(ctx) }

// StartAutoextend starts background extension; see Lock.StartAutoextend.
func (r *RLock) StartAutoextend(timeout time.Duration) error {
	return r.lock.StartAutoextend(timeout)
}

// StopAutoextend stops background extension; see Lock.StopAutoextend.
func (r *RLock) StopAutoextend() { r.lock.StopAutoextend() }
