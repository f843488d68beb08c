package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// reply is one node's answer in a quorum round.
type reply struct {
	node  *node
	ok    bool  // the node did what was asked: set, extended, released, holds the key
	value int64 // the integer reply of the node script (the PTTL for a check)
	err   error // a *NodeError when the node did not answer
}

// round is the tally of one quorum round at the moment its outcome was decided.
type round struct {
	start   time.Time // before the first command was sent
	decided time.Time // when the outcome became known
	replies []reply   // the answers received by then, in arrival order
	oks     int       // nodes that did what was asked
	noes    int       // nodes that answered but refused (the key is absent or another token's)
	errs    []error   // nodes that did not answer
}

// elapsed is the time from the first command to the decision.
func (r *round) elapsed() time.Duration { return r.decided.Sub(r.start) }

// nodeOp performs one round's command on one node, bounded by ctx.
type nodeOp func(ctx context.Context, n *node) reply

// fanout is the parallel, early-deciding quorum call shared by every lock
// operation. It needs the node list, the quorum and the per-node timeout, and
// tracks its goroutines in bg so that their owner can wait for them.
type fanout struct {
	nodes       []*node
	quorum      int
	nodeTimeout time.Duration
	bg          *sync.WaitGroup
}

// run sends op to every node at once. Without waitAll it returns as soon as
// the outcome is decided: quorum nodes said yes, or so many refused or failed
// that a quorum is out of reach. It never waits for the slowest node then:
// the remaining commands finish in their goroutines, bounded by the node
// timeout, and each calls after (if not nil) with its reply, which is how a
// late answer of an attempt that failed gets cleaned up. The results channel
// is buffered to the node count, so no goroutine blocks on a caller that has
// gone.
func (f *fanout) run(ctx context.Context, op nodeOp, waitAll bool, after func(reply)) round {
	r := round{start: time.Now(), replies: make([]reply, 0, len(f.nodes))}
	results := make(chan reply, len(f.nodes))
	for _, n := range f.nodes {
		f.bg.Add(1)
		go func() {
			defer f.bg.Done()
			nctx, cancel := context.WithTimeout(ctx, f.nodeTimeout)
			rep := op(nctx, n)
			cancel()
			rep.node = n
			results <- rep
			if after != nil {
				after(rep)
			}
		}()
	}
	maxRefusals := len(f.nodes) - f.quorum
	for range f.nodes {
		rep := <-results
		r.replies = append(r.replies, rep)
		switch {
		case rep.err != nil:
			r.errs = append(r.errs, rep.err)
		case rep.ok:
			r.oks++
		default:
			r.noes++
		}
		if !waitAll && (r.oks >= f.quorum || r.noes+len(r.errs) > maxRefusals) {
			break
		}
	}
	r.decided = time.Now()
	return r
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
