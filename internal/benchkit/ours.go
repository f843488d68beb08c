package benchkit

import (
	"context"
	"time"

	"github.com/redlockplus/redlock"
)

// RestartWindow is the node guard's restart window of the targets made
// here (redlock.WithRestartGuard; opts may set another). A benchmark's
// nodes are fresh, and the default window of a TTL would keep them out of
// the vote for that long. The guard judges every vote the same way
// whatever the window, so its cost is measured in full; a run starts its
// nodes at least RestartWindow before it measures (NodesReady).
const RestartWindow = time.Second

// NodesReady waits until nodes started at started are old enough to vote
// under RestartWindow, or ctx ends. The guard counts a node's run from
// INFO's uptime_in_seconds, in whole seconds, so up to a second short:
// the wait is the window, that second and a margin.
func NodesReady(ctx context.Context, started time.Time) error {
	t := time.NewTimer(time.Until(started.Add(RestartWindow + time.Second + 100*time.Millisecond)))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// guarded puts the benchmark's restart window before opts.
func guarded(opts []redlock.Option) []redlock.Option {
	return append([]redlock.Option{redlock.WithRestartGuard(RestartWindow)}, opts...)
}

// Ours returns a target for this module's redlock package: a
// redlock.Factory over pools with opts as its defaults. Each Locker is a
// *redlock.Lock made by the factory; Lock is Acquire and Unlock is Release.
// A Keeper is a lock with the given TTL and autoextend on (the default of
// Lock), lost when its Err reports a loss. A Watcher is the same lock,
// whose Done is the Lock's Done. Close closes the factory.
//
// The target is also a WatchTarget when the factory's quorum is the
// default (a majority of the nodes): its LossKeys are the key on the first
// len(pools)/2+1 nodes.
func Ours(name string, pools []redlock.Pool, opts ...redlock.Option) (KeepTarget, error) {
	f, err := redlock.NewFactory(pools, guarded(opts)...)
	if err != nil {
		return nil, err
	}
	return &ours{name: name, f: f, nodes: len(pools)}, nil
}

// OursNodes is Ours over nodes of any client, through
// redlock.NewFactoryFromNodes; Close closes the factory, not the clients.
func OursNodes(name string, nodes []redlock.Node, opts ...redlock.Option) (KeepTarget, error) {
	f, err := redlock.NewFactoryFromNodes(nodes, guarded(opts)...)
	if err != nil {
		return nil, err
	}
	return &ours{name: name, f: f, nodes: len(nodes)}, nil
}

type ours struct {
	name  string
	f     *redlock.Factory
	nodes int
}

var _ WatchTarget = (*ours)(nil)

func (o *ours) Name() string { return o.name }

func (o *ours) NewLocker(key string) (Locker, error) {
	return ourLocker{o.f.NewLock(key)}, nil
}

func (o *ours) NewKeeper(key string, ttl time.Duration) (Keeper, error) {
	return ourLocker{o.f.NewLock(key, redlock.WithTTL(ttl), redlock.WithAutoextend(true))}, nil
}

func (o *ours) NewWatcher(key string, ttl time.Duration) (Watcher, error) {
	return ourLocker{o.f.NewLock(key, redlock.WithTTL(ttl), redlock.WithAutoextend(true))}, nil
}

func (o *ours) LossKeys(key string) []NodeKey {
	out := make([]NodeKey, o.nodes/2+1)
	for i := range out {
		out[i] = NodeKey{Node: i, Key: key}
	}
	return out
}

func (o *ours) Close() error { return o.f.Close() }

type ourLocker struct{ l *redlock.Lock }

func (l ourLocker) Lock(ctx context.Context) error {
	_, err := l.l.Acquire(ctx)
	return err
}

func (l ourLocker) Unlock(ctx context.Context) error { return l.l.Release(ctx) }

func (l ourLocker) Lost() error { return l.l.Err() }

func (l ourLocker) Done() <-chan struct{} { return l.l.Done() }

// OursRecipe returns a target for one of the package's other primitives:
// each Locker is made by make from a factory over pools with opts as its
// defaults (a Semaphore, ReadLock, WriteLock, MultiLock...); Lock is
// Acquire and Unlock is Release. Close closes the factory.
func OursRecipe(name string, pools []redlock.Pool, make func(f *redlock.Factory, key string) redlock.Locker, opts ...redlock.Option) (Target, error) {
	f, err := redlock.NewFactory(pools, guarded(opts)...)
	if err != nil {
		return nil, err
	}
	return &recipe{ours: ours{name: name, f: f}, make: make}, nil
}

type recipe struct {
	ours
	make func(f *redlock.Factory, key string) redlock.Locker
}

func (r *recipe) NewLocker(key string) (Locker, error) { return recipeLocker{r.make(r.f, key)}, nil }

type recipeLocker struct{ l redlock.Locker }

func (l recipeLocker) Lock(ctx context.Context) error {
	_, err := l.l.Acquire(ctx)
	return err
}

func (l recipeLocker) Unlock(ctx context.Context) error { return l.l.Release(ctx) }
