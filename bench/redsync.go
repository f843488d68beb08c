package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/redigo"
	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/benchkit"
)

// redsyncTarget measures go-redsync/redsync v4 over redigo pools. Lock is
// Mutex.LockContext with redsync's own retries (32 tries, 50-250 ms apart
// by default), Unlock is Mutex.UnlockContext.
//
// redsync has no autoextension, so a Keeper runs the loop a user would
// write: one goroutine per held lock calling ExtendContext every TTL/2,
// retrying at the next tick after a failure, until the validity of the last
// successful extension (Mutex.Until) has passed: the lock is then lost.
//
// With FailFast, UnlockContext returns at quorum while goroutines of the
// call still read the Mutex's token, so the next LockContext on the same
// Mutex races with them (the race detector reports it, and a late release
// could carry the new token). The failfast target therefore takes a new
// Mutex for every Lock, as a careful user would.
type redsyncTarget struct {
	name  string
	rs    *redsync.Redsync
	opts  []redsync.Option
	fresh bool // a new Mutex per Lock
	bg    sync.WaitGroup

	mu         sync.Mutex
	extendErr  error // the first failed extension, for the report
	extendErrs int
}

// noteExtendErr records a failed extension.
func (t *redsyncTarget) noteExtendErr(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.extendErrs++
	if t.extendErr == nil {
		t.extendErr = err
	}
}

// extendFailures returns how many extensions failed and the first error.
func (t *redsyncTarget) extendFailures() (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.extendErrs, t.extendErr
}

var (
	_ benchkit.KeepTarget = (*redsyncTarget)(nil)
	_ benchkit.Keeper     = (*redsyncKeeper)(nil)
)

func newRedsync(name string, pools []*redis.Pool, failFast bool) *redsyncTarget {
	var opts []redsync.Option
	if failFast {
		opts = append(opts, redsync.WithFailFast(true))
	}
	ps := make([]rsredis.Pool, len(pools))
	for i, p := range pools {
		ps[i] = redigo.NewPool(p)
	}
	return &redsyncTarget{name: name, rs: redsync.New(ps...), opts: opts, fresh: failFast}
}

func (t *redsyncTarget) Name() string { return t.name }

func (t *redsyncTarget) NewLocker(key string) (benchkit.Locker, error) {
	return &redsyncLocker{t: t, key: key, m: t.rs.NewMutex(key, t.opts...)}, nil
}

func (t *redsyncTarget) NewKeeper(key string, ttl time.Duration) (benchkit.Keeper, error) {
	opts := append([]redsync.Option{redsync.WithExpiry(ttl)}, t.opts...)
	return &redsyncKeeper{t: t, m: t.rs.NewMutex(key, opts...), every: ttl / 2}, nil
}

// Close waits for the extension loops.
func (t *redsyncTarget) Close() error {
	t.bg.Wait()
	return nil
}

type redsyncLocker struct {
	t   *redsyncTarget
	key string
	m   *redsync.Mutex
}

func (l *redsyncLocker) Lock(ctx context.Context) error {
	if l.t.fresh {
		l.m = l.t.rs.NewMutex(l.key, l.t.opts...)
	}
	return l.m.LockContext(ctx)
}

func (l *redsyncLocker) Unlock(ctx context.Context) error { return unlock(ctx, l.m) }

// unlock turns redsync's (bool, error) into one error.
func unlock(ctx context.Context, m *redsync.Mutex) error {
	ok, err := m.UnlockContext(ctx)
	if !ok && err == nil {
		err = errors.New("redsync: unlock reached no quorum")
	}
	return err
}

// redsyncKeeper is a redsync mutex with an extension loop while held.
type redsyncKeeper struct {
	t     *redsyncTarget
	m     *redsync.Mutex
	every time.Duration
	lost  atomic.Pointer[error] // why the lock was lost
	stop  chan struct{}
	done  chan struct{}
}

func (k *redsyncKeeper) Lock(ctx context.Context) error {
	if err := k.m.LockContext(ctx); err != nil {
		return err
	}
	k.lost.Store(nil)
	k.stop, k.done = make(chan struct{}), make(chan struct{})
	k.t.bg.Add(1)
	go k.extendLoop()
	return nil
}

// extendLoop extends the lock every TTL/2 until Unlock. A failed extension
// is retried at the next tick; once the validity of the last successful one
// has passed, the lock is marked lost and the loop ends.
func (k *redsyncKeeper) extendLoop() {
	defer k.t.bg.Done()
	defer close(k.done)
	tick := time.NewTicker(k.every)
	defer tick.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), k.every)
			ok, err := k.m.ExtendContext(ctx)
			cancel()
			if ok && err == nil {
				continue
			}
			if err == nil {
				err = errors.New("redsync: extend reached no quorum")
			}
			k.t.noteExtendErr(err)
			if !time.Now().Before(k.m.Until()) {
				lost := fmt.Errorf("redsync: lock %s expired; last extension: %w", k.m.Name(), err)
				k.lost.Store(&lost)
				return
			}
		}
	}
}

func (k *redsyncKeeper) Unlock(ctx context.Context) error {
	if k.stop == nil {
		return fmt.Errorf("redsync keeper %s: unlock before lock", k.m.Name())
	}
	close(k.stop)
	<-k.done
	k.stop = nil
	return unlock(ctx, k.m)
}

func (k *redsyncKeeper) Lost() error {
	if p := k.lost.Load(); p != nil {
		return *p
	}
	return nil
}
