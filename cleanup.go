package redlock

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Background cleanup. Deletes that must happen but could not be done in
// the foreground (a node failed a Release, a failed attempt's SET was still
// travelling on a pool connection, a lost lock's keys) go to the node's
// cleaner: one queue and at most one goroutine per node, whatever the load.
// The queue is bounded and deduplicated; what does not fit is dropped,
// counted and logged, and its key expires with its TTL. While the node
// fails, the worker pauses with a doubling backoff and keeps the queue, so
// the pending deletes run when the node comes back.

const (
	// maxCleanupQueue bounds a node's queue of pending deletes.
	maxCleanupQueue = 4096
	// maxCleanupBatch bounds the deletes sent in one script call.
	maxCleanupBatch = 128
	// minUncertainTries is how many deletes a key whose SET may still land
	// gets, even when the first finds nothing.
	minUncertainTries = 3
	// maxCleanupBackoff bounds the pause of a worker whose node fails.
	maxCleanupBackoff = time.Second
	// maxLoneRetry bounds, in node timeouts, how long the cleaner of a lock
	// made by NewLock retries a delete, and maxLoneRetryTime in time.
	maxLoneRetry     = 7
	maxLoneRetryTime = 5 * time.Second
)

// discard is a lock key to delete if it still holds token.
type discard struct {
	key, token string
	until      time.Time // the key cannot live past this: no need to delete after
}

// pendingDiscard is a discard waiting in a queue.
type pendingDiscard struct {
	discard
	uncertain bool              // its SET's reply was lost: it may land later
	set       *finish           // when set: uncertain iff this node's call of that round failed
	tries     int               // deletes sent so far
	since     time.Time         // when it was queued
	after     []<-chan struct{} // the delete must wait for these (calls still running)
}

// cleaner is one node's cleanup queue and worker.
type cleaner struct {
	n           *node
	o           *owner
	nodeTimeout time.Duration
	logger      *slog.Logger
	dropped     atomic.Int64
	// giveUp, when positive, bounds how long a delete is retried. A lone
	// lock's owner is never closed, so its work must end by itself: its
	// deletes are retried for maxLoneRetry node timeouts, 5 s at most. A factory's are
	// retried while the key could live, and Close ends them.
	giveUp time.Duration

	mu      sync.Mutex
	idle    *sync.Cond // signalled when the worker ends
	queue   []pendingDiscard
	queued  map[discard]int // index in queue, for deduplication
	running bool
}

func newCleaner(n *node, o *owner, nodeTimeout time.Duration, logger *slog.Logger) *cleaner {
	c := &cleaner{n: n, o: o, nodeTimeout: nodeTimeout, logger: logger, queued: map[discard]int{}}
	c.idle = sync.NewCond(&c.mu)
	return c
}

// waitIdle blocks until the worker has nothing left to do.
func (c *cleaner) waitIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.running {
		c.idle.Wait()
	}
}

// add queues a delete, to be sent once every channel of after is closed
// (calls on the node that the delete must follow). A delete already queued
// is merged; one that does not fit is dropped.
func (c *cleaner) add(d discard, uncertain bool, after ...<-chan struct{}) {
	c.enqueue(pendingDiscard{discard: d, uncertain: uncertain, after: after})
}

// addBehind queues the delete of a key that the attempt's round fin
// wrote, to be sent once fin's calls and after are done; it is retried as
// uncertain only when this node's call of fin failed: a SET that answered
// has landed, and one delete behind it is enough. (Every late SET used to
// get minUncertainTries deletes: on a go-redis node, three extra script
// calls for most uncontended cycles, whose third SET comes after the
// quorum.) On a FIFO connection fin is nil and the delete follows the
// attempt on the same connection: uncertain says whether it is retried.
func (c *cleaner) addBehind(d discard, uncertain bool, fin *finish, after ...<-chan struct{}) {
	if fin == nil {
		c.add(d, uncertain, after...)
		return
	}
	c.enqueue(pendingDiscard{discard: d, set: fin, after: append(after, fin.done)})
}

func (c *cleaner) enqueue(p pendingDiscard) {
	d := p.discard
	c.mu.Lock()
	defer c.mu.Unlock()
	if i, ok := c.queued[d]; ok {
		// Merged: retried if either would be (a set of its own counts).
		c.queue[i].uncertain = c.queue[i].uncertain || p.uncertain || p.set != nil
		return
	}
	if len(c.queue) >= maxCleanupQueue {
		n := c.dropped.Add(1)
		if c.logger != nil && n&(n-1) == 0 { // 1st, 2nd, 4th, ...: a storm logs a few lines
			c.logger.Warn("redlock: cleanup queue full, a key is left to expire", "node", c.n.address(), "lock", d.key, "dropped", n)
		}
		return
	}
	c.queued[d] = len(c.queue)
	p.since = time.Now()
	c.queue = append(c.queue, p)
	if !c.running && c.o.spawn(c.loop) {
		c.running = true
	}
}

// loop is the worker: it sends the queue in batches until it is empty.
func (c *cleaner) loop() {
	backoff := c.nodeTimeout / 4
	for {
		batch := c.take()
		if len(batch) == 0 {
			return
		}
		if c.send(batch) {
			backoff = c.nodeTimeout / 4
			continue
		}
		if !c.pause(backoff) {
			continue // closing: one more try at once, then the queue is dropped
		}
		backoff = min(2*backoff, maxCleanupBackoff)
	}
}

// take removes up to maxCleanupBatch deletes from the queue, drops the
// expired ones, and waits for a still-running SET when nothing else is
// ready. It ends the worker (running false) when the queue is empty.
func (c *cleaner) take() []pendingDiscard {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		now := time.Now()
		var batch []pendingDiscard
		rest := c.queue[:0]
		for _, p := range c.queue {
			switch {
			case !p.until.After(now) || c.giveUp > 0 && now.Sub(p.since) > c.giveUp:
				delete(c.queued, p.discard)
			case len(batch) < maxCleanupBatch && allClosed(p.after):
				delete(c.queued, p.discard)
				batch = append(batch, p)
			default:
				c.queued[p.discard] = len(rest)
				rest = append(rest, p)
			}
		}
		clear(c.queue[len(rest):])
		c.queue = rest
		switch {
		case len(batch) > 0:
			return batch
		case len(rest) == 0:
			c.running = false
			c.idle.Broadcast()
			return nil
		}
		after := rest[0].after
		c.mu.Unlock()
		for _, ch := range after {
			<-ch // pool calls, bounded by the node timeout
		}
		c.mu.Lock()
	}
}

// allClosed reports whether every channel of chs is closed.
func allClosed(chs []<-chan struct{}) bool {
	for _, ch := range chs {
		select {
		case <-ch:
		default:
			return false
		}
	}
	return true
}

// send deletes a batch in one script call. It requeues what failed and
// what must be tried again, and reports whether the node answered. While
// the owner closes, nothing is requeued: this was the last try.
func (c *cleaner) send(batch []pendingDiscard) bool {
	keys := make([]any, len(batch))
	tokens := make([]any, len(batch))
	for i, p := range batch {
		keys[i], tokens[i] = p.key, p.token
	}
	cmd := releaseManyScript.cmd(judgeList(len(batch)), keys, tokens...)
	cmd.unacked = true // a cleanup's replicas cannot matter: nobody counts it
	ctx, cancel := context.WithTimeout(context.Background(), c.nodeTimeout)
	rep := c.n.do(ctx, cmd, c.nodeTimeout)
	cancel()
	if c.o.closing() {
		return rep.err == nil
	}
	for i, p := range batch {
		p.tries++
		uncertain := p.uncertain || p.set != nil && p.set.failedOn(c.n.index)
		again := rep.err != nil || rep.raw.([]int64)[i] == 0 && uncertain && p.tries < minUncertainTries
		if again {
			c.requeue(p)
		}
	}
	return rep.err == nil
}

// requeue puts p back at the end of the queue unless it is queued anew.
func (c *cleaner) requeue(p pendingDiscard) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.queued[p.discard]; ok {
		return
	}
	c.queued[p.discard] = len(c.queue)
	c.queue = append(c.queue, p)
}

// pause waits d before the next try; it reports false at once when the
// owner starts closing.
func (c *cleaner) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.o.dying:
		return false
	}
}
