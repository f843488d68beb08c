package redlock

import (
	"context"
	"io"
	"slices"
	"sync"
	"time"
)

// Factory creates locks over one set of nodes with shared defaults, checks
// the node list once, and owns all background work of its locks: the
// connections, the extender, the cleanup workers and the subscribers.
// Close releases the locks still held and waits for all of it.
type Factory struct {
	nodeGroup
	set      *nodeSet
	defaults config
	ext      *extender
	wake     *waker        // nil: blocked Acquire calls poll
	det      *lossDetector // nil: loss detection off (lossdetection.go)
	ownPools []io.Closer   // pools made by NewFactoryFromURLs, closed by Close

	shapesMu sync.Mutex
	shapes   map[config]*lockShape // shared by the locks of each configuration (shape.go)

	closeOnce sync.Once
	closeErr  error
}

// NewFactory checks the nodes and the default options and returns a
// factory. It fails with an *InsufficientNodesError for fewer than 3 nodes
// and ErrInvalidArgument for nil or duplicate nodes or an invalid option.
// It does not contact the nodes: the first operation checks that they are
// distinct servers (see ErrInvalidArgument), and InitRedisNodes loads the
// scripts ahead of time if wanted. It is NewFactoryFromNodes over one
// PoolNode per pool.
func NewFactory(nodes []Pool, opts ...Option) (*Factory, error) {
	return NewFactoryFromNodes(poolNodes(nodes), opts...)
}

// NewFactoryFromNodes is NewFactory over nodes of any client. It applies
// the same checks: it fails with an *InsufficientNodesError for fewer than
// 3 nodes and ErrInvalidArgument for a nil or repeated node or an invalid
// option, and the first operation refuses nodes that are the same server
// (by the run_id of INFO server). Nodes made by PoolNode keep the
// pipelining and wake-ups of NewFactory when every node of the list is one;
// in a mixed list they borrow a pool connection per command. Other nodes
// run their commands in goroutines of the factory, in batches when the
// node is a Batcher. Blocked Acquire calls are woken by releases through
// the nodes that are PubSubNodes (or PoolNodes of a *redis.Pool); over
// none of them they poll. Close does not close the nodes' clients.
func NewFactoryFromNodes(nodes []Node, opts ...Option) (*Factory, error) {
	cfg := defaultConfig().apply(opts)
	check := cfg
	if err := check.validate(len(nodes)); err != nil {
		return nil, err
	}
	if err := checkNodes(nodes); err != nil {
		return nil, err
	}
	if err := checkAckNodes(nodes, check.replicaAck); err != nil {
		return nil, err
	}
	f := newFactory(nodes, cfg, check, check.pipelining && allPools(nodes))
	if check.wakeups {
		f.wake = newWaker(nodes, check.nodeTimeout, f.o, cfg.logger)
	}
	if check.lossDetection && check.pipelining && allPools(nodes) {
		f.det = newLossDetector(&f.nodeGroup, check.nodeTimeout, f.ext.obs, cfg.logger)
	}
	return f, nil
}

// newPrivateFactory is the owner of a lock made by NewLock or NewRLock:
// pool connections, no subscribers, never closed; its goroutines end when
// they have nothing to do.
func newPrivateFactory(nodes []Pool, opts []Option) (*Factory, error) {
	if len(nodes) < 3 {
		return nil, &InsufficientNodesError{NodeCount: len(nodes)}
	}
	cfg := defaultConfig().apply(opts)
	check := cfg
	if check.validate(len(nodes)) != nil {
		cfg = defaultConfig() // the lock reports the error
		check = cfg
		_ = check.validate(len(nodes)) // the defaults are valid
	}
	cfg.factoryOnly = ""
	if err := checkPools(nodes); err != nil {
		return nil, err
	}
	f := newFactory(poolNodes(nodes), cfg, check, false)
	f.ext.linger = false
	for _, n := range f.nodes {
		n.cleaner.giveUp = min(maxLoneRetry*n.cleaner.nodeTimeout, maxLoneRetryTime)
	}
	return f, nil
}

// newFactory builds the nodes with their transports and cleaners, from a
// checked node list, the options cfg and their validated form check.
func newFactory(nodes []Node, cfg, check config, pipelined bool) *Factory {
	o := newOwner()
	f := &Factory{defaults: cfg, nodeGroup: nodeGroup{o: o, fifo: pipelined, clock: newRoundClock(o, check.nodeTimeout/4)}}
	if pipelined {
		// One connection per node keeps each node's order, and one lock
		// makes it the same order on every node (fanout.start).
		f.starts = new(sync.Mutex)
	}
	f.set = &nodeSet{g: &f.nodeGroup, o: o, quorum: check.quorum, nodeTimeout: check.nodeTimeout}
	for i, nd := range nodes {
		n := &node{index: i, addr: nd.Addr(), set: f.set, ack: ackWait(check.replicaAck, check.nodeTimeout)}
		n.guard.n = n
		p, isPool := nd.(poolNode)
		n.cluster, _ = nd.(*clusterNode)
		cp, clusterPooled := clusterPoolOf(nd)
		n.fifo = (isPool || clusterPooled) && pipelined
		switch {
		case isPool && pipelined:
			n.pool, n.tr = p.p, newPipeTransport(p.p, o, max(check.nodeTimeout, minStall), n)
		case clusterPooled && pipelined:
			n.pool, n.tr = cp, newPipeTransport(cp, o, max(check.nodeTimeout, minStall), n)
		case isPool:
			n.pool, n.tr = p.p, newNodeTransport(nd, o, check.nodeTimeout)
		default:
			n.tr = newNodeTransport(nd, o, check.nodeTimeout)
			if _, batches := n.tr.(*batchTransport); batches && f.starts == nil {
				f.starts = new(sync.Mutex)
			}
		}
		n.cleaner = newCleaner(n, o, check.nodeTimeout, cfg.logger)
		f.nodes = append(f.nodes, n)
	}
	f.set.list = f.nodes
	f.ext = newExtender(&f.nodeGroup)
	f.ext.obs = newObserver(&cfg, "")
	f.set.events = f.ext.obs
	return f
}

// minStall is the least time a pipelined reply may be overdue before its
// connection is dropped: callers stop waiting after their node timeout
// anyway, so only a connection that is clearly hung is given up.
const minStall = 250 * time.Millisecond

// NewFactoryFromURLs is NewFactory over one NewPool per URL. A URL is
// redis://[[user]:password@]host[:port][/db], rediss:// for TLS, or a bare
// host:port, read as redis://host:port (as the CLI's --nodes reads it).
// The factory owns those pools and closes them in Close. Two URLs that
// name the same server are refused: by their text here, and by the
// server's identity at the first operation.
func NewFactoryFromURLs(urls []string, opts ...Option) (*Factory, error) {
	full := make([]string, len(urls))
	for i, u := range urls {
		var err error
		if full[i], err = nodeURL(u); err != nil {
			return nil, err
		}
	}
	pools, closers, err := poolsFromURLs(full)
	if err != nil {
		return nil, err
	}
	f, err := NewFactory(pools, opts...)
	if err != nil {
		for _, c := range closers {
			c.Close()
		}
		return nil, err
	}
	f.ownPools = closers
	return f, nil
}

// NewLock returns a Lock over the factory's nodes with the factory's
// defaults overridden by opts. An invalid name or option is returned by the
// lock's first call, as NewLock returns it.
func (f *Factory) NewLock(name string, opts ...Option) *Lock {
	return f.newLock(name, opts, true)
}

// NewRLock returns a reentrant RLock; see NewLock. RLocks do not autoextend
// unless WithAutoextend(true) is given.
func (f *Factory) NewRLock(name string, opts ...Option) *RLock {
	return &RLock{lock: f.newLock(name, opts, false)}
}

// Do acquires the lock name (blocking, as Lock.Acquire), runs fn, and
// releases the lock when fn returns or panics (the panic goes on). fn's
// context is cancelled with cause ErrLockLost when the lock is lost while
// fn runs; Do then returns an error matching ErrLockLost and fn's own
// error, if any, with both on one line. Autoextension is on unless opts
// turn it off. With WithFencing(true), FenceFrom(ctx) gives fn the
// holding's token. A failed release is returned when fn succeeded.
func (f *Factory) Do(ctx context.Context, name string, fn func(ctx context.Context) error, opts ...Option) error {
	if fn == nil {
		return invalidArg("Do of lock %q: fn is nil", name)
	}
	l := f.NewLock(name, opts...)
	if _, err := l.Acquire(ctx); err != nil {
		return err
	}
	h := l.holding()
	fnCtx, cancel := context.WithCancelCause(withFence(ctx, h))
	stop := h.afterEnd(func(cause error) {
		if cause != nil {
			cancel(cause)
		}
	})
	released := false
	defer func() { // fn panicked: release, then let the panic go on
		if !released {
			stop()
			cancel(nil)
			_ = l.Release(ctx)
		}
	}()
	fnErr := fn(fnCtx)
	released = true
	stop()
	cancel(nil)
	lost := l.Err()
	relErr := l.Release(ctx)
	switch {
	case lost != nil && fnErr != nil:
		return wrapf("%w; fn returned: %w", lost, fnErr)
	case lost != nil:
		return lost
	case fnErr != nil:
		return fnErr
	case relErr != nil:
		return wrapf("release after Do: %w", relErr)
	}
	return nil
}

// Close shuts the factory down, in this order: it refuses new operations
// (they return ErrClosed; blocked and in-flight Acquire calls return an
// error matching ErrNotAcquired and ErrClosed and give up the keys they
// set), releases every lock still held (its Done closes, its Err and
// Release return ErrClosed), lets the cleanup workers try what is queued
// once more, stops the extender, connections and subscribers, and waits
// for every goroutine of the factory. It takes about two node timeouts at
// most when nodes do not answer. It then closes the pools the factory
// created. Calling it again returns the first call's result.
func (f *Factory) Close() error {
	f.closeOnce.Do(func() { f.closeErr = f.close() })
	return f.closeErr
}

func (f *Factory) close() error {
	held, _ := f.o.beginClose()
	errs := f.releaseAll(held)
	f.o.waitOps() // in-flight operations end at once: their waits look at dying
	f.ext.stop()
	if f.wake != nil {
		f.wake.close()
	}
	if f.det != nil {
		f.det.close()
		f.det.untrack()
	}
	f.stopTransports()
	f.o.waitAll()
	for _, p := range f.ownPools {
		if err := p.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return joinErrors(errs...)
}

// releaseAll ends the held holdings for Close and deletes their keys, in
// batches of up to maxCleanupBatch keys, one round each and all at once,
// waiting for the nodes (at most one node timeout) although the owner is
// closing. It returns the failures.
func (f *Factory) releaseAll(held []*holding) []error {
	var batches []keySet
	var parts [][]*holding
	for _, h := range held {
		l := h.l
		if !l.endHolding(h, ErrClosed) {
			continue // released or lost meanwhile
		}
		l.f.ext.unschedule(h, true)
		if len(parts) == 0 || len(parts[len(parts)-1]) == maxCleanupBatch {
			batches, parts = append(batches, keySet{}), append(parts, nil)
		}
		k := len(parts) - 1
		batches[k].locks, parts[k] = append(batches[k].locks, l), append(parts[k], h)
	}
	errs := make([][]error, len(batches))
	var wg sync.WaitGroup
	for k := range batches {
		wg.Add(1)
		if !f.o.spawn(func() { defer wg.Done(); errs[k] = f.releaseBatch(batches[k], parts[k]) }) {
			wg.Done()
		}
	}
	wg.Wait()
	return slices.Concat(errs...)
}

// releaseBatch releases one batch of Close and tells each lock's observer.
func (f *Factory) releaseBatch(ks keySet, hs []*holding) []error {
	fan := ks.lead().fan
	fan.dying, fan.clock, fan.obs = nil, nil, nil // the clock stops as Close begins
	for _, l := range ks.locks {
		fan.nodeTimeout = max(fan.nodeTimeout, l.cfg.nodeTimeout)
	}
	r := ks.release(context.Background(), &fan, hs)
	defer r.free()
	var errs []error
	for i, l := range ks.locks {
		var err error
		if t := ks.keyTally(&r, i); !t.reached(l.cfg.quorum) {
			err = wrapf("lock %q: %w", l.name, t.failure("released", len(fan.nodes), l.cfg.quorum))
			errs = append(errs, err)
		}
		l.obs.released(context.Background(), hs[i], true, err)
	}
	return errs
}

// stopTransports closes every node's connection once the cleaners are
// idle, so that their last deletes are written.
func (f *Factory) stopTransports() {
	for _, n := range f.nodes {
		n.cleaner.waitIdle()
	}
	for _, n := range f.nodes {
		n.tr.close()
	}
}
