package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/redlockplus/redlock/internal/benchkit"
)

// rueidislockPrefix is rueidislock's default key prefix: the lock "name"
// is the keys "rueidislock:<i>:name", i from 0 to 2*KeyMajority-2.
const rueidislockPrefix = "rueidislock"

// rueidislockTarget measures github.com/redis/rueidis/rueidislock, the
// anchor of issue 15: one Locker (one rueidis client, which waits on
// client-side-caching invalidations) on the first node only, as it takes
// its keys on one deployment. KeyMajority is 1 (one key, "rueidislock") or
// its default 2 (a majority of 3 keys on that node, "rueidislock-default").
// NoLoopTracking is on, as its README advises for Redis >= 7.0.5 (the
// holder's own extensions then send it no invalidation).
//
// Lock is WithContext (which waits for the key), Unlock calls the cancel
// function it returned (which deletes the keys and waits for the lock's
// goroutines). The lock's context is cancelled once the majority of its
// keys is lost: Done is that context's Done.
type rueidislockTarget struct {
	name     string
	l        rueidislock.Locker
	majority int32
	validity time.Duration
}

var (
	_ benchkit.WatchTarget = (*rueidislockTarget)(nil)
	_ benchkit.Watcher     = (*rueidislockLocker)(nil)
)

// rueidislockTargets are the rueidislock targets; they take part in W1 on
// 3 nodes, W2, W3 and W9.
func rueidislockTargets() []target {
	runs := func(w benchkit.Workload) bool {
		switch w.ID {
		case "W1-3", "W2", "W3", "W9":
			return true
		}
		return false
	}
	return []target{
		{name: "rueidislock", build: rueidislockBuilder("rueidislock", 1), runs: runs},
		{name: "rueidislock-default", build: rueidislockBuilder("rueidislock-default", 0), runs: runs},
	}
}

// rueidislockBuilder builds a rueidislock target on the first node; a
// KeyMajority of 0 is rueidislock's default. The key validity is w.TTL when
// the workload sets one (W9's 120 s), else rueidislock's default (5 s).
func rueidislockBuilder(name string, majority int32) func([]string, []*redis.Pool, benchkit.Workload) (benchkit.Target, error) {
	return func(addrs []string, _ []*redis.Pool, w benchkit.Workload) (benchkit.Target, error) {
		l, err := rueidislock.NewLocker(rueidislock.LockerOption{
			ClientOption:   rueidis.ClientOption{InitAddress: addrs[:1]},
			KeyPrefix:      rueidislockPrefix,
			KeyMajority:    majority,
			KeyValidity:    w.TTL,
			NoLoopTracking: true,
		})
		if err != nil {
			return nil, fmt.Errorf("rueidislock: %w", err)
		}
		if majority <= 0 {
			majority = 2 // rueidislock's default
		}
		return &rueidislockTarget{name: name, l: l, majority: majority, validity: w.TTL}, nil
	}
}

func (t *rueidislockTarget) Name() string { return t.name }

func (t *rueidislockTarget) NewLocker(key string) (benchkit.Locker, error) {
	return &rueidislockLocker{l: t.l, name: key}, nil
}

// NewWatcher returns a handle whose lock lives the target's key validity,
// which must be ttl: rueidislock sets it per Locker, not per lock.
func (t *rueidislockTarget) NewWatcher(key string, ttl time.Duration) (benchkit.Watcher, error) {
	if ttl != t.validity {
		return nil, fmt.Errorf("rueidislock: a lock of %v on a locker built for %v", ttl, t.validity)
	}
	return &rueidislockLocker{l: t.l, name: key}, nil
}

// LossKeys returns the majority's first keys, all on the first node.
func (t *rueidislockTarget) LossKeys(key string) []benchkit.NodeKey {
	out := make([]benchkit.NodeKey, t.majority)
	for i := range out {
		out[i] = benchkit.NodeKey{Node: 0, Key: rueidislockPrefix + ":" + strconv.Itoa(i) + ":" + key}
	}
	return out
}

// Close closes the Locker and its client.
func (t *rueidislockTarget) Close() error {
	t.l.Close()
	return nil
}

// rueidislockLocker is one lock name of a rueidislock Locker, used by one
// goroutine at a time.
type rueidislockLocker struct {
	l      rueidislock.Locker
	name   string
	ctx    context.Context
	cancel context.CancelFunc
}

func (l *rueidislockLocker) Lock(ctx context.Context) error {
	lctx, cancel, err := l.l.WithContext(ctx, l.name)
	if err != nil {
		return err
	}
	l.ctx, l.cancel = lctx, cancel
	return nil
}

func (l *rueidislockLocker) Unlock(context.Context) error {
	if l.cancel == nil {
		return errors.New("rueidislock: unlock before lock")
	}
	l.cancel()
	l.cancel = nil
	return nil
}

// Done is the lock's context's Done: closed when the majority of its keys
// is lost or Unlock released it.
func (l *rueidislockLocker) Done() <-chan struct{} { return l.ctx.Done() }
