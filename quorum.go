package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// reply is one node's answer in a quorum round.
type reply struct {
	err   error // a *NodeError when the node did not answer
	raw   any   // the reply itself, for commands that need more than value
	value int64 // the integer reply of the node script (the PTTL for a check)
	ok    bool  // the node did what was asked: set, extended, released, holds the key
}

// maxNodes bounds the node count, so that a round can keep its bookkeeping
// in one machine word.
const maxNodes = 64

// round is the tally of one quorum round at the moment its outcome was decided.
type round struct {
	start   time.Time // before the first command was sent
	decided time.Time // when the outcome became known
	slots   []reply   // one per node, written by the node's reply; read only those in got
	got     uint64    // the nodes whose reply was counted
	oks     int       // nodes that did what was asked
	noes    int       // nodes that answered but refused (the key is absent or another token's)
	errs    []error   // nodes that failed or did not answer in time
	late    uint64    // the nodes given up on: their slots must not be read
	all     []*node   // the round's nodes
	// arrived holds, per node, when its reply was counted, from start; only
	// rounds that wait for every node keep it.
	arrived []time.Duration
}

// elapsed is the time from the first command to the decision.
func (r *round) elapsed() time.Duration { return r.decided.Sub(r.start) }

// each calls fn with every counted reply and its node, in node order.
// Replies that came after the decision are never read: their senders may
// still be writing.
func (r *round) each(fn func(n *node, rep *reply)) {
	for i, n := range r.all {
		if r.got&(1<<i) != 0 {
			fn(n, &r.slots[i])
		}
	}
}

// nodeCmd is the command a quorum round sends to every node, with the
// reading of its reply.
type nodeCmd struct {
	script *redis.Script // a lock script (EVALSHA, EVAL on NOSCRIPT), or
	name   string        // a plain command
	args   []any
	judge  func(v any) reply // reads a reply that is not an error
	wire   []any             // EVALSHA arguments, built once per round
	// release, if set, is the attempt whose key the command deletes: the
	// release is announced to local waiters once the command is queued on
	// every (pipelined) node, and a node whose delete fails, before or
	// after the round decided, is tried again in the background.
	release *attempt
	// detached commands outlive the caller's context, which bounds only its
	// wait: a release or cleanup must reach the slow nodes too.
	detached bool
}

// fanout is the parallel, early-deciding quorum call shared by every lock
// operation.
type fanout struct {
	nodes       []*node
	quorum      int
	nodeTimeout time.Duration
	bg          *sync.WaitGroup
}

// timers recycles the node-timeout timers of pipelined rounds. Since Go
// 1.23 a stopped or reset timer delivers no stale value, so reuse is safe.
var timers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// run sends cmd to every node at once. Without waitAll it returns as soon as
// the outcome is decided: quorum nodes said yes, or so many refused or failed
// that a quorum is out of reach. It never waits for the slowest node then,
// and never longer than the node timeout for any node.
//
// Each reply is written to the node's slot and announced by its index on a
// channel buffered to the node count, so no sender ever blocks on a caller
// that has gone. On pipelined nodes a late reply is simply dropped. On plain
// pools each node's command runs in a goroutine, which calls after (if not
// nil) with its reply once the command is done, late or not: that is how an
// attempt that failed deletes what a late SET wrote.
func (f *fanout) run(ctx context.Context, cmd nodeCmd, waitAll bool, after func(*node, reply)) round {
	r := round{start: time.Now(), slots: make([]reply, len(f.nodes)), all: f.nodes}
	if waitAll {
		r.arrived = make([]time.Duration, len(f.nodes))
	}
	results := make(chan uint8, len(f.nodes))
	pipelined := f.nodes[0].pipe != nil // a factory's nodes are all one way
	if cmd.script != nil && pipelined && cmd.wire == nil {
		cmd.wire = scriptArgs(cmd.script.Hash(), cmd.args)
	}
	slots, cctx := r.slots, ctx
	if cmd.detached && ctx.Done() != nil {
		cctx = context.WithoutCancel(ctx)
	}
	for _, n := range f.nodes {
		if n.pipe != nil {
			n.start(cctx, cmd, slots, results)
			continue
		}
		f.bg.Add(1)
		go f.runOn(cctx, n, cmd, slots, results, after)
	}
	var timeout <-chan time.Time
	if pipelined { // pool goroutines bound themselves with their contexts
		if cmd.release != nil {
			cmd.release.announce()
		}
		t := timers.Get().(*time.Timer)
		t.Reset(f.nodeTimeout)
		defer func() { t.Stop(); timers.Put(t) }()
		timeout = t.C
	}
	maxRefusals := len(f.nodes) - f.quorum
	for r.got|r.late != r.all64() {
		select {
		case i := <-results:
			r.count(int(i))
		case <-timeout:
			r.silent(context.DeadlineExceeded)
		case <-ctx.Done():
			r.silent(ctx.Err())
		}
		if !waitAll && (r.oks >= f.quorum || r.noes+len(r.errs) > maxRefusals) {
			break
		}
	}
	r.decided = time.Now()
	return r
}

// runOn runs cmd on node n's pool, in its own goroutine (tracked in bg),
// and hands the reply to after once it was announced.
func (f *fanout) runOn(ctx context.Context, n *node, cmd nodeCmd, slots []reply, results chan<- uint8, after func(*node, reply)) {
	defer f.bg.Done()
	nctx, cancel := context.WithTimeout(ctx, f.nodeTimeout)
	rep := n.run(nctx, cmd)
	cancel()
	if rep.err != nil && cmd.release != nil {
		cmd.release.retryOn(n)
	}
	slots[n.index] = rep
	results <- uint8(n.index)
	if after != nil {
		after(n, rep)
	}
}

// all64 is the got mask with every node set.
func (r *round) all64() uint64 { return 1<<len(r.all) - 1 }

// count takes node i's reply into the tally.
func (r *round) count(i int) {
	rep := &r.slots[i]
	if r.arrived != nil {
		r.arrived[i] = time.Since(r.start)
	}
	r.got |= 1 << i
	switch {
	case rep.err != nil:
		r.errs = append(r.errs, rep.err)
	case rep.ok:
		r.oks++
	default:
		r.noes++
	}
}

// silent counts every node that has not answered as failed with err,
// without touching their slots, which late replies may still write.
func (r *round) silent(err error) {
	for i, n := range r.all {
		if r.got&(1<<i) == 0 {
			r.errs = append(r.errs, n.wrap(err))
			r.late |= 1 << i
		}
	}
}

// reached reports whether a quorum said yes.
func (r *round) reached(quorum int) bool { return r.oks >= quorum }

// refusedByQuorum reports whether enough nodes answered "not yours" that a
// quorum can never agree: the lock is gone, not merely unreachable.
func (r *round) refusedByQuorum(nodes, quorum int) bool { return r.noes > nodes-quorum }

// failure explains a round that did not reach its quorum: ErrLockLost if a
// quorum positively refused, ErrNoQuorum otherwise, with the node errors.
func (r *round) failure(what string, nodes, quorum int) error {
	kind := ErrNoQuorum
	if r.refusedByQuorum(nodes, quorum) {
		kind = ErrLockLost
	}
	return fmt.Errorf("%w: %w", kind, r.detail(what, nodes, quorum))
}

// detail describes the round's count and carries its node errors.
func (r *round) detail(what string, nodes, quorum int) error {
	msg := fmt.Sprintf("%s on %d of %d nodes, quorum %d", what, r.oks, nodes, quorum)
	if len(r.errs) == 0 {
		return errors.New(msg)
	}
	return fmt.Errorf("%s: %w", msg, errors.Join(r.errs...))
}
