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
	node  *node
	ok    bool      // the node did what was asked: set, extended, released, holds the key
	value int64     // the integer reply of the node script (the PTTL for a check)
	raw   any       // the reply itself, for commands that need more than value
	at    time.Time // when the caller received it
	err   error     // a *NodeError when the node did not answer
}

// round is the tally of one quorum round at the moment its outcome was decided.
type round struct {
	start   time.Time // before the first command was sent
	decided time.Time // when the outcome became known
	replies []reply   // the answers received by then, in arrival order
	oks     int       // nodes that did what was asked
	noes    int       // nodes that answered but refused (the key is absent or another token's)
	errs    []error   // nodes that did not answer
	all     []*node   // the round's nodes
}

// elapsed is the time from the first command to the decision.
func (r *round) elapsed() time.Duration { return r.decided.Sub(r.start) }

// nodeCmd is the command a quorum round sends to every node, with the
// reading of its reply.
type nodeCmd struct {
	script *redis.Script // a lock script (EVALSHA, EVAL on NOSCRIPT), or
	name   string        // a plain command
	args   []any
	judge  func(v any) reply // reads a reply that is not an error
	wire   []any             // EVALSHA arguments, built once per round
	queued func()            // if set, called once the command is queued on every (pipelined) node
}

// fanout is the parallel, early-deciding quorum call shared by every lock
// operation.
type fanout struct {
	nodes       []*node
	quorum      int
	nodeTimeout time.Duration
	bg          *sync.WaitGroup
}

// run sends cmd to every node at once. Without waitAll it returns as soon as
// the outcome is decided: quorum nodes said yes, or so many refused or failed
// that a quorum is out of reach. It never waits for the slowest node then,
// and never longer than the node timeout for any node.
//
// On pipelined nodes the commands are queued on the node's shared connection
// and a late reply is simply dropped. On plain pools each node's command runs
// in a goroutine, which calls after (if not nil) with its reply once the
// command is done, late or not: that is how an attempt that failed deletes
// what a late SET wrote. The results channel is buffered to the node count,
// so no goroutine blocks on a caller that has gone.
func (f *fanout) run(ctx context.Context, cmd nodeCmd, waitAll bool, after func(reply)) round {
	r := round{start: time.Now(), replies: make([]reply, 0, len(f.nodes)), all: f.nodes}
	results := make(chan reply, len(f.nodes))
	pipelined := f.nodes[0].pipe != nil // a factory's nodes are all one way
	queued := cmd.queued
	cmd.queued = nil
	if cmd.script != nil && pipelined {
		cmd.wire = scriptArgs(cmd.script.Hash(), cmd.args)
	}
	for _, n := range f.nodes {
		if n.pipe != nil {
			n.start(ctx, &cmd, results)
			continue
		}
		f.bg.Add(1)
		go func() {
			defer f.bg.Done()
			nctx, cancel := context.WithTimeout(ctx, f.nodeTimeout)
			rep := n.run(nctx, cmd)
			cancel()
			results <- rep
			if after != nil {
				after(rep)
			}
		}()
	}
	if queued != nil && pipelined { // pool connections give no order to rely on
		queued()
	}
	timeout := time.NewTimer(f.nodeTimeout)
	defer timeout.Stop()
	var small [64]bool // answered, without an allocation for usual node counts
	answered := small[:0]
	if len(f.nodes) <= len(small) {
		answered = small[:len(f.nodes)]
	} else {
		answered = make([]bool, len(f.nodes))
	}
	maxRefusals := len(f.nodes) - f.quorum
	for len(r.replies) < len(f.nodes) {
		var rep reply
		select {
		case rep = <-results:
		case <-timeout.C: // only pipelined nodes can still be silent here
			r.silent(answered, context.DeadlineExceeded)
		case <-ctx.Done():
			r.silent(answered, ctx.Err())
		}
		if rep.node == nil {
			break
		}
		rep.at = time.Now()
		answered[rep.node.index] = true
		r.add(rep)
		if !waitAll && (r.oks >= f.quorum || r.noes+len(r.errs) > maxRefusals) {
			break
		}
	}
	r.decided = time.Now()
	return r
}

// add counts one reply.
func (r *round) add(rep reply) {
	r.replies = append(r.replies, rep)
	switch {
	case rep.err != nil:
		r.errs = append(r.errs, rep.err)
	case rep.ok:
		r.oks++
	default:
		r.noes++
	}
}

// silent counts every node that has not answered as failed with err.
func (r *round) silent(answered []bool, err error) {
	for _, n := range r.nodesOf(answered) {
		r.add(reply{node: n, err: n.wrap(err)})
	}
}

// nodesOf lists the nodes not marked in answered.
func (r *round) nodesOf(answered []bool) []*node {
	var out []*node
	for i, a := range answered {
		if !a {
			out = append(out, r.all[i])
		}
	}
	return out
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
