package redlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Factory creates locks over one set of nodes with shared defaults, checks
// the node list once, and owns the background work of its locks: Close
// releases the locks still held, stops their autoextenders and waits.
type Factory struct {
	nodes    []*node
	defaults config
	ownPools []io.Closer // pools made by NewFactoryFromURLs, closed by Close
	bg       sync.WaitGroup
	ext      *extender
	wake     *waker        // nil: blocked Acquire calls poll
	closing  chan struct{} // closed by Close: background retries stop waiting

	mu     sync.Mutex
	closed bool
	held   map[*Lock]struct{} // locks currently held
}

// releaseOnCloseTimeout bounds how long Close spends releasing held locks.
const releaseOnCloseTimeout = 5 * time.Second

// NewFactory checks the nodes and the default options and returns a
// factory. It fails with an *InsufficientNodesError for fewer than 3 nodes
// and ErrInvalidArgument for nil or duplicate nodes or an invalid option.
// It does not contact the nodes (see InitRedisNodes).
func NewFactory(nodes []Pool, opts ...Option) (*Factory, error) {
	ns, err := newNodes(nodes)
	if err != nil {
		return nil, err
	}
	f := &Factory{nodes: ns, defaults: defaultConfig().apply(opts), held: map[*Lock]struct{}{}, closing: make(chan struct{})}
	check := f.defaults
	if err := check.validate(len(ns)); err != nil {
		return nil, err
	}
	if check.pipelining {
		for _, n := range ns {
			n.pipe = newPipeline(n.pool, check.nodeTimeout, &f.bg)
		}
	}
	f.ext = newExtender(ns, &f.bg, true)
	if check.wakeups {
		f.wake = newWaker(ns, check.nodeTimeout, &f.bg)
	}
	return f, nil
}

// NewFactoryFromURLs is NewFactory over one NewPool per URL. The factory owns
// those pools and closes them in Close.
func NewFactoryFromURLs(urls []string, opts ...Option) (*Factory, error) {
	if len(urls) < 3 {
		return nil, &InsufficientNodesError{NodeCount: len(urls)}
	}
	pools := make([]Pool, len(urls))
	closers := make([]io.Closer, 0, len(urls))
	seen := map[string]int{}
	for i, u := range urls {
		addr, err := parseNodeURL(u)
		if err != nil {
			return nil, err
		}
		if j, dup := seen[u]; dup {
			return nil, invalidArg("node %d repeats the URL of node %d (%s)", i, j, addr)
		}
		seen[u] = i
		p, err := NewPool(u)
		if err != nil {
			return nil, err
		}
		pools[i] = p
		closers = append(closers, p)
	}
	f, err := NewFactory(pools, opts...)
	if err != nil {
		return nil, err
	}
	f.ownPools = closers
	return f, nil
}

// NewLock returns a Lock over the factory's nodes with the factory's
// defaults overridden by opts. An invalid name or option is returned by the
// lock's first call.
func (f *Factory) NewLock(name string, opts ...Option) *Lock {
	return newLock(name, f.nodes, f.defaults.apply(opts), f, &f.bg, f.ext, true)
}

// NewRLock returns a reentrant RLock; see NewLock. RLocks do not autoextend
// unless WithAutoextend(true) is given.
func (f *Factory) NewRLock(name string, opts ...Option) *RLock {
	return &RLock{lock: newLock(name, f.nodes, f.defaults.apply(opts), f, &f.bg, f.ext, false)}
}

// Do acquires the lock name (blocking, as Lock.Acquire), runs fn, and
// releases the lock when fn returns. fn's context is cancelled with cause
// ErrLockLost when the lock is lost while fn runs; Do then returns an error
// matching ErrLockLost (joined with fn's own error). Autoextension is on
// unless opts turn it off. A failed release is returned when fn succeeded.
func (f *Factory) Do(ctx context.Context, name string, fn func(ctx context.Context) error, opts ...Option) error {
	if fn == nil {
		return invalidArg("Do of lock %q: fn is nil", name)
	}
	l := f.NewLock(name, opts...)
	if _, err := l.Acquire(ctx); err != nil {
		return err
	}
	fnCtx, cancel := context.WithCancelCause(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-l.Done():
			cancel(l.Err())
		case <-fnCtx.Done():
		}
	}()
	fnErr := fn(fnCtx)
	cancel(nil)
	<-watched
	lost := l.Err()
	relErr := l.Release(context.WithoutCancel(ctx))
	switch {
	case lost != nil:
		return errors.Join(fnErr, lost)
	case fnErr != nil:
		return fnErr
	case relErr != nil:
		return fmt.Errorf("release after Do: %w", relErr)
	}
	return nil
}

// Close releases every lock of the factory that is still held (stopping its
// autoextender; its Done closes and its Err and Release return ErrClosed),
// waits for all background work, and closes the pools the factory created.
// Locks of a closed factory return ErrClosed from every call.
func (f *Factory) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	held := make([]*Lock, 0, len(f.held))
	for l := range f.held {
		held = append(held, l)
	}
	f.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), releaseOnCloseTimeout)
	defer cancel()
	var errs []error
	for _, l := range held {
		if err := l.release(ctx, ErrClosed); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrInvalidOperation) {
			errs = append(errs, err)
		}
	}
	for _, n := range f.nodes {
		if n.pipe != nil {
			n.pipe.close()
		}
	}
	if f.wake != nil {
		f.wake.close()
	}
	f.ext.stop() // drops lost holdings and ends the extender
	close(f.closing)
	f.bg.Wait()
	for _, p := range f.ownPools {
		if err := p.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (f *Factory) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// track registers or unregisters a lock whose autoextender runs.
func (f *Factory) track(l *Lock, running bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if running {
		f.held[l] = struct{}{}
	} else {
		delete(f.held, l)
	}
}
