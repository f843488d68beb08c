package sdlstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockplus/redlock"
)

// Lock is ricsdl's SyncLock: a named lock, "{ns},resource", with an
// expiration. Get one from Store.LockResource.
//
// With fewer than 3 instances it is ricsdl's single-node lock on the
// namespace's instance: SET NX PX with a random token, and Release, Refresh
// and ValidityTime act only while the key still holds that token, so it
// excludes ricsdl and sdlgo lockers of the same resource. With 3 or more
// instances it is a redlock quorum lock over all of them under the same key
// (a majority must grant it); ricsdl clients, which lock one instance only,
// are then not excluded by it.
//
// A lock is not extended automatically: it is lost when its expiration runs
// out, unless Refresh is called in time. Its methods are safe for concurrent
// use, but one Lock is one holder.
type Lock struct {
	s          *Store
	key        string
	expiration time.Duration

	mu    sync.Mutex
	in    *instance      // single-node mode
	token string         // single-node: the held token, "" when not held
	nodes []redlock.Pool // quorum mode
	rl    *redlock.Lock  // quorum: the held lock, nil when not held
}

// LockResource returns the lock of resource in namespace ns, with the given
// expiration (at least 1 ms; whole milliseconds). It does not acquire it.
func (s *Store) LockResource(ns, resource string, expiration time.Duration) (*Lock, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if err := checkNamespace(ns); err != nil {
		return nil, err
	}
	if err := checkName("resource", resource); err != nil {
		return nil, err
	}
	if expiration < time.Millisecond {
		return nil, invalidArg("lock expiration %v is below 1ms", expiration)
	}
	l := &Lock{s: s, key: nsKey(ns, resource), expiration: expiration.Truncate(time.Millisecond)}
	if len(s.insts) < 3 {
		l.in = s.inst(ns)
		return l, nil
	}
	for _, in := range s.insts {
		l.nodes = append(l.nodes, in.pool)
	}
	if _, err := l.newQuorumLock(); err != nil { // validates the expiration against redlock's rules
		return nil, err
	}
	return l, nil
}

// Key returns the Redis key of the lock, "{ns},resource".
func (l *Lock) Key() string { return l.key }

// newQuorumLock makes a one-attempt, non-extending redlock lock.
func (l *Lock) newQuorumLock() (*redlock.Lock, error) {
	rl, err := redlock.NewLock(l.key, l.nodes,
		redlock.WithTTL(l.expiration), redlock.WithAutoextend(false), redlock.WithRetryTimes(0))
	if err != nil {
		return nil, lockErr("lock", err)
	}
	return rl, nil
}

// Acquire tries to take the lock, again every retryInterval until
// retryTimeout has passed (0: one attempt), as ricsdl's acquire. It reports
// whether the lock was taken; false with a nil error means another holder
// kept it. Acquiring a lock this Lock already holds is an
// ErrRejectedByBackend. If ctx ends while waiting, the error matches
// ErrNotConnected and ctx.Err().
func (l *Lock) Acquire(ctx context.Context, retryInterval, retryTimeout time.Duration) (bool, error) {
	if err := l.s.usable(); err != nil {
		return false, err
	}
	if retryTimeout < 0 {
		return false, invalidArg("retry timeout %v is negative", retryTimeout)
	}
	if retryInterval < 0 || (retryTimeout > 0 && retryInterval == 0) {
		return false, invalidArg("retry interval %v must be positive", retryInterval)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.token != "" || l.rl != nil {
		return false, rejected("lock %q is already held by this Lock", l.key)
	}
	stopAt := time.Now().Add(retryTimeout)
	for {
		ok, err := l.try(ctx)
		if err != nil || ok {
			return ok, err
		}
		if time.Now().Add(retryInterval).After(stopAt) {
			return false, nil
		}
		t := time.NewTimer(retryInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, backendErr("lock acquire", ctx.Err())
		case <-t.C:
		}
	}
}

// try makes one attempt; l.mu is held.
func (l *Lock) try(ctx context.Context) (bool, error) {
	if l.in != nil {
		token, err := newToken()
		if err != nil {
			return false, backendErr("lock acquire", err)
		}
		v, err := l.s.do(ctx, l.in, "lock acquire", "SET", l.key, token, "NX", "PX", l.expiration.Milliseconds())
		if err != nil || v == nil {
			return false, err
		}
		l.token = token
		return true, nil
	}
	rl, err := l.newQuorumLock()
	if err != nil {
		return false, err
	}
	if _, err := rl.TryAcquire(ctx); err != nil {
		// Refused by holders: not acquired. Too many instances failing to
		// answer for a quorum: not connected.
		n := len(l.nodes)
		if errors.Is(err, redlock.ErrNotAcquired) && ctx.Err() == nil && countNodeErrors(err) <= n-(n/2+1) {
			return false, nil
		}
		return false, lockErr("lock acquire", err)
	}
	l.rl = rl
	return true, nil
}

// Release frees the lock. It is an ErrLockNotHeld when the lock is not held
// by this Lock (never acquired, released, or expired and perhaps taken by
// another owner); the Lock is not held afterwards either way.
func (l *Lock) Release(ctx context.Context) error {
	if err := l.s.usable(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.in != nil {
		if l.token == "" {
			return notHeld(l.key)
		}
		token := l.token
		l.token = ""
		n, err := redis.Int64(l.s.eval(ctx, l.in, "lock release", lockReleaseScript, l.key, token))
		if err != nil {
			return replyErr("lock release", err)
		}
		if n != 1 {
			return notHeld(l.key)
		}
		return nil
	}
	if l.rl == nil {
		return notHeld(l.key)
	}
	rl := l.rl
	l.rl = nil
	return lockErr("lock release", rl.Release(ctx))
}

// Refresh resets the lock's remaining time to its full expiration. It is an
// ErrLockNotHeld when the lock is no longer held by this Lock.
func (l *Lock) Refresh(ctx context.Context) error {
	if err := l.s.usable(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.in != nil {
		if l.token == "" {
			return notHeld(l.key)
		}
		n, err := redis.Int64(l.s.eval(ctx, l.in, "lock refresh", lockRefreshScript,
			l.key, l.token, strconv.FormatInt(l.expiration.Milliseconds(), 10)))
		if err != nil {
			return replyErr("lock refresh", err)
		}
		if n != 1 {
			l.token = ""
			return notHeld(l.key)
		}
		return nil
	}
	if l.rl == nil {
		return notHeld(l.key)
	}
	_, err := l.rl.Extend(ctx)
	if errors.Is(err, redlock.ErrLockLost) {
		l.rl = nil
	}
	return lockErr("lock refresh", err)
}

// ValidityTime returns how long the lock remains held unless refreshed: the
// key's PTTL on its instance, or with 3+ instances the smallest remainder on
// a quorum after the drift allowance. It is an ErrLockNotHeld when the lock
// is not held by this Lock.
func (l *Lock) ValidityTime(ctx context.Context) (time.Duration, error) {
	if err := l.s.usable(); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.in != nil {
		if l.token == "" {
			return 0, notHeld(l.key)
		}
		ms, err := redis.Int64(l.s.eval(ctx, l.in, "lock validity", lockValidityScript, l.key, l.token))
		if err != nil {
			return 0, replyErr("lock validity", err)
		}
		if ms < 0 {
			l.token = ""
			return 0, notHeld(l.key)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	if l.rl == nil {
		return 0, notHeld(l.key)
	}
	held, times, err := l.rl.CheckTimes(ctx)
	if err != nil && !errors.Is(err, redlock.ErrLockLost) {
		return 0, lockErr("lock validity", err)
	}
	if !held {
		l.rl = nil
		return 0, notHeld(l.key)
	}
	// A quorum (the default N/2+1 of the lock) holds it as long as the
	// quorum-th longest remaining time: the nodes beyond the quorum may lag
	// (an extension returns once a quorum took it).
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	return sorted[len(sorted)-(len(sorted)/2+1)], nil
}

// notHeld is the ErrLockNotHeld of a lock key.
func notHeld(key string) error {
	return fmt.Errorf("%w: %q is not held by this Lock", ErrLockNotHeld, key)
}

// lockErr maps an error of the redlock package.
func lockErr(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redlock.ErrLockLost), errors.Is(err, redlock.ErrInvalidOperation):
		return fmt.Errorf("%w: %s: %w", ErrLockNotHeld, op, err)
	case errors.Is(err, redlock.ErrInvalidArgument):
		return fmt.Errorf("%w: %s: %w", ErrInvalidArgument, op, err)
	case errors.Is(err, redlock.ErrNoQuorum), errors.Is(err, redlock.ErrNotAcquired):
		return fmt.Errorf("%w: %s: %w", ErrNotConnected, op, err)
	}
	return backendErr(op, err)
}

// newToken returns a random lock token.
func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// countNodeErrors counts the *redlock.NodeError values in err's tree.
func countNodeErrors(err error) int {
	if _, ok := err.(*redlock.NodeError); ok {
		return 1
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		n := 0
		for _, e := range u.Unwrap() {
			n += countNodeErrors(e)
		}
		return n
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			return countNodeErrors(e)
		}
	}
	return 0
}
