package sdlstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Lock is ricsdl's SyncLock: a named lock, "{ns},resource", with an
// expiration. Get one from Store.LockResource.
//
// # Where it lives
//
// On any number of instances the lock is the key "{ns},resource" on the
// namespace's home instance (crc32(ns) % instances) and nowhere else:
// SET NX PX with a random token, and Release, Refresh and ValidityTime act
// only while the key still holds that token. This is byte for byte the
// lock ricsdl and sdlgo take, so a ricsdl or sdlgo locker of the same
// resource and this Lock exclude each other in both directions: whoever
// holds the home key first stops the other's SET NX.
//
// The lock takes nothing beyond the home instance. The other placements
// that keep the home key are worse for an SDL lock:
//
//   - Home plus a majority of all instances costs availability (a majority
//     must answer) and buys no safety: two such sets may meet only at home,
//     so when home loses its keys two holders are possible, exactly as with
//     home alone.
//   - Home plus a majority of the other instances does survive home losing
//     its keys (two majorities of the others meet in one instance), but on
//     3 instances it needs all 3: one instance down would stop the locks of
//     every namespace, also of namespaces whose data is fully available. And
//     the gain is for sdlstore lockers only: the ricsdl and sdlgo lockers
//     this package must exclude hold home alone, so in a mixed deployment a
//     home that loses its keys admits two holders whatever this lock takes
//     elsewhere. The data the lock guards lives on home alone too; when home
//     loses its keys it loses that data as well.
//
// # Why two Locks exclude each other
//
// To hold the lock a Lock must have created the home key with its own
// token (SET NX: Redis creates a key only if it is absent, one command at a
// time). While that key exists no other SET NX on it succeeds, whoever
// sends it. The key disappears only by its expiry or by a delete of the
// holder itself: Release deletes, and Refresh extends, only when the key
// holds the caller's token (one Lua script, atomic), so no Lock ever
// removes or prolongs another holder's key. Hence at most one token holds
// the key at any moment, and a Lock that holds it holds it until it
// releases it or the expiration runs out. This holds through any failure of
// the other instances, of clients (a crashed holder's key expires), and of
// the network (a holder cut off loses the lock when the expiration runs
// out; it must not act after ValidityTime says so). It fails when the home
// instance loses the key before it expires: a restart without persistence
// (or with the last writes not yet on disk), a failover to a replica that
// had not received the SET yet, FLUSHALL, or eviction under maxmemory. Like
// every Redis lock it gives no fencing token: a holder paused past its
// expiration may still act after another has taken over.
//
// # When the home instance is slow or down
//
// Then the namespace's data is unavailable anyway, and so is its lock:
// Acquire, Release, Refresh and ValidityTime return an ErrNotConnected
// (Acquire does not report false, so an outage is not mistaken for another
// holder), and locks of namespaces on other instances are unaffected. One
// attempt of Acquire is bounded by the lock's expiration, since a SET that
// answers later is useless. When an attempt's reply is lost, Acquire tries
// to delete the key in case the SET did land; if that delete runs first,
// the key stays until it expires, blocking the resource for at most one
// expiration.
//
// A lock is not extended automatically: it is lost when its expiration runs
// out, unless Refresh is called in time. It runs no goroutine: every call
// is done when it returns. Its methods are safe for concurrent use, but one
// Lock is one holder.
type Lock struct {
	s          *Store
	in         *instance // the namespace's home instance
	ns         string
	key        string
	expiration time.Duration

	mu    sync.Mutex
	token string // the held token, "" when not held
}

// lockCleanupTimeout bounds the delete that follows an attempt whose reply
// was lost.
const lockCleanupTimeout = time.Second

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
	return &Lock{s: s, in: s.inst(ns), ns: ns, key: nsKey(ns, resource), expiration: expiration.Truncate(time.Millisecond)}, nil
}

// Key returns the Redis key of the lock, "{ns},resource".
func (l *Lock) Key() string { return l.key }

// Acquire tries to take the lock, again every retryInterval until
// retryTimeout has passed (0: one attempt), as ricsdl's acquire. It reports
// whether the lock was taken; false with a nil error means another holder
// kept it. Acquiring a lock this Lock already holds is an
// ErrRejectedByBackend. When the home instance cannot be reached, or ctx
// ends, the error matches ErrNotConnected (and ctx.Err()).
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
	if l.token != "" {
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

// try makes one attempt, bounded by the expiration; l.mu is held.
func (l *Lock) try(ctx context.Context) (bool, error) {
	token, err := newToken()
	if err != nil {
		return false, backendErr("lock acquire", err)
	}
	actx, cancel := context.WithTimeout(ctx, l.expiration)
	defer cancel()
	v, err := l.s.do(actx, l.in, l.ns, "lock acquire", "SET", l.key, token, "NX", "PX", l.expiration.Milliseconds())
	if err != nil {
		if lostReply(err) {
			l.discard(ctx, token)
		}
		return false, err
	}
	if v == nil {
		return false, nil
	}
	l.token = token
	return true, nil
}

// lostReply reports whether a command may have run although its reply did
// not arrive: any failure but an error reply from Redis.
func lostReply(err error) bool {
	var re redis.Error
	return !errors.As(err, &re)
}

// discard deletes the key if it holds token, ignoring ctx's end: the SET of
// a lost reply may have landed.
func (l *Lock) discard(ctx context.Context, token string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockCleanupTimeout)
	defer cancel()
	_, _ = l.s.eval(cctx, l.in, l.ns, "lock cleanup", lockReleaseScript, l.key, token)
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
	if l.token == "" {
		return notHeld(l.key)
	}
	token := l.token
	l.token = ""
	n, err := redis.Int64(l.s.eval(ctx, l.in, l.ns, "lock release", lockReleaseScript, l.key, token))
	if err != nil {
		return replyErr("lock release", err)
	}
	if n != 1 {
		return notHeld(l.key)
	}
	return nil
}

// Refresh resets the lock's remaining time to its full expiration. It is an
// ErrLockNotHeld when the lock is no longer held by this Lock.
func (l *Lock) Refresh(ctx context.Context) error {
	if err := l.s.usable(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.token == "" {
		return notHeld(l.key)
	}
	n, err := redis.Int64(l.s.eval(ctx, l.in, l.ns, "lock refresh", lockRefreshScript,
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

// ValidityTime returns how long the lock remains held unless refreshed: the
// key's PTTL on the home instance. It is an ErrLockNotHeld when the lock is
// not held by this Lock.
func (l *Lock) ValidityTime(ctx context.Context) (time.Duration, error) {
	if err := l.s.usable(); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.token == "" {
		return 0, notHeld(l.key)
	}
	ms, err := redis.Int64(l.s.eval(ctx, l.in, l.ns, "lock validity", lockValidityScript, l.key, l.token))
	if err != nil {
		return 0, replyErr("lock validity", err)
	}
	if ms < 0 {
		l.token = ""
		return 0, notHeld(l.key)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// notHeld is the ErrLockNotHeld of a lock key.
func notHeld(key string) error {
	return fmt.Errorf("%w: %q is not held by this Lock", ErrLockNotHeld, key)
}

// newToken returns a random lock token.
func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
