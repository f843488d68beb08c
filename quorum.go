package redlock

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxNodes bounds the node count, so that a round can keep its bookkeeping
// in one machine word.
const maxNodes = 64

// round is one command sent to every node at once, and its tally at the
// moment its outcome was decided.
type round struct {
	start   time.Time // before the first command was sent
	decided time.Time // when the outcome became known
	slots   []reply   // one per node, written by the node's reply; read only those in got
	buf     *roundBuf // where slots and arrivals live; nil once freed
	fin     *finish   // pool transports: closed once every call is done
	got     uint64    // the nodes whose reply was counted
	oks     int       // nodes that did what was asked
	noes    int       // nodes that answered but refused (the key is absent or another token's)
	errs    []error   // nodes that failed or did not answer in time
	late    uint64    // the nodes given up on: their slots must not be read
	all     []*node   // the round's nodes
	cmd     *command
	// arrived holds, per node, when its reply was counted, from start; only
	// rounds that wait for every node keep it.
	arrived []time.Duration
}

// fanout is the parallel, early-deciding quorum call shared by every lock
// operation. nodeGroup.fan makes one.
type fanout struct {
	nodes       []*node
	fifo        bool // every node's transport is one pipelined connection
	quorum      int
	nodeTimeout time.Duration
	dying       <-chan struct{} // the owner's Close: a round stops waiting
	clock       *roundClock     // nil: every round that waits arms a timer
	obs         *observer       // nil: nobody listens (observe.go)
	// starts, when set, is held while a round queues its calls, so that
	// concurrent rounds queue in one order on every node (batchTransport
	// says why).
	starts *sync.Mutex
}

// nodeGroup is the node list of a factory as its rounds see it.
type nodeGroup struct {
	nodes []*node
	o     *owner
	// fifo: every node's transport is one pipelined connection, on which
	// commands reach the node in the order they were started.
	fifo   bool
	starts *sync.Mutex // when pipelined or a node batches: see fanout.starts
	clock  *roundClock // the rounds' coarse node timeout (roundclock.go)
}

// fan returns the quorum call over the group with the given quorum, node
// timeout and observer (nil: none).
func (g *nodeGroup) fan(quorum int, nodeTimeout time.Duration, obs *observer) fanout {
	return fanout{nodes: g.nodes, fifo: g.fifo, quorum: quorum, nodeTimeout: nodeTimeout, dying: g.o.dying, clock: g.clock, obs: obs, starts: g.starts}
}

// timers recycles the node-timeout timers of rounds. Since Go 1.23 a
// stopped or reset timer delivers no stale value, so reuse is safe.
var timers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// run sends cmd and waits for the outcome; see send and wait.
func (f *fanout) run(ctx context.Context, cmd *command, waitAll bool) round {
	r := f.send(ctx, cmd)
	f.wait(ctx, &r, waitAll)
	return r
}

// send starts cmd on every node at once. Each reply is written to the
// node's slot and marked in the buffer's arrivals; the caller is woken
// only when a reply decides the round or completes it (roundBuf.arrive),
// so no sender ever blocks on a caller that has gone.
func (f *fanout) send(ctx context.Context, cmd *command) round {
	r := f.prepare(cmd)
	f.start(ctx, []*roundBuf{r.buf})
	return r
}

// sendAll sends the commands as rounds[k] like send, all at once: on a
// pipelined node they go out in one write, where one by one each would
// queue behind the replies to the one before. ctx must suit every command
// (the extender's batches send with none), and there are batchesInFlight
// commands at most.
func (f *fanout) sendAll(ctx context.Context, cmds []*command, rounds []round) {
	var bufs [batchesInFlight]*roundBuf
	for k, cmd := range cmds {
		rounds[k] = f.prepare(cmd)
		bufs[k] = rounds[k].buf
	}
	f.start(ctx, bufs[:len(cmds)])
}

// prepare makes the round of cmd and its calls, one per node in the
// round's buffer.
func (f *fanout) prepare(cmd *command) round {
	buf := getRoundBuf(len(f.nodes), f.quorum, cmd.contest)
	r := round{start: time.Now(), slots: buf.slots, all: f.nodes, cmd: cmd, buf: buf}
	if !f.fifo {
		r.fin = newFinish(len(f.nodes))
	}
	sent := r.start.UnixMicro()
	for i, n := range f.nodes {
		c := &buf.calls[i]
		c.cmd, c.n, c.idx, c.fin, c.buf, c.obs, c.sent = cmd, n, uint8(n.index), r.fin, buf, f.obs, sent
	}
	return r
}

// start starts the calls of the rounds whose buffers are bufs, in that
// order, each on its node. The calls live in the buffers, which the
// callers' references keep until they are freed, so no list of them is
// built: an array of pointers sized for the most nodes a round may have
// doubled send's frame, zeroed at every round on a goroutine stack that
// is cold after its wait (BENCHMARKS.md, step 19). Under
// starts, every node queues the calls of concurrent rounds in one order
// (batchTransport says why). A pipelined node's call is prepared before
// and only put in its connection's queue under it; the queues these
// rounds must write are written once it is released, each once, so that
// neither a write nor a cluster's slot map holds up the other rounds.
func (f *fanout) start(ctx context.Context, bufs []*roundBuf) {
	if f.starts == nil {
		for _, b := range bufs {
			for i, n := range f.nodes {
				n.tr.start(ctx, &b.calls[i])
			}
		}
		return
	}
	for _, b := range bufs {
		for i, n := range f.nodes {
			if p, ok := n.tr.(*pipeTransport); ok {
				p.prepare(ctx, &b.calls[i])
			}
		}
	}
	var owed uint64 // the pipelined nodes whose queue waits for these rounds' write
	f.starts.Lock()
	for _, b := range bufs {
		for i, n := range f.nodes {
			p, ok := n.tr.(*pipeTransport)
			switch {
			case !ok:
				n.tr.start(ctx, &b.calls[i])
			case p.conn.Put(&b.calls[i]):
				owed |= 1 << i
			}
		}
	}
	f.starts.Unlock()
	for i, n := range f.nodes {
		if owed&(1<<i) != 0 {
			n.tr.(*pipeTransport).conn.Write()
		}
	}
}

// wait tallies the replies. Without waitAll it returns as soon as the
// outcome is decided: quorum nodes said yes, or so many refused or failed
// that a quorum is out of reach. It never waits for the slowest node then,
// and never longer than the node timeout for any node; ctx and the owner's
// Close cut it short. The caller parks once per decision, not once per
// reply: the handing over of each reply through a channel and a select
// was a fifth of the client's CPU in a W2 cycle (BENCHMARKS.md). While
// the node timeout is far, the round waits for it on the factory's round
// clock (roundclock.go), and arms a timer of its own only once it is near:
// a round that decides first, as nearly all do, touches no timer.
//
// A contested attempt, one that a node refused (command.contest), waits
// for the nodes still silent until twice the time the first refusal took
// to come, contestWait at least, and then gives up on them (ErrContested).
// Only yeses from all of them could still make its quorum, and meanwhile
// it holds keys on the nodes that granted it: two attempts that split the
// free nodes would each wait the node timeout for a silent minority, and
// the next contenders split them again as those keys go at different
// moments (failover scenario 11 over go-redis: no acquisition in a 1.5 s
// window with two nodes partitioned away). Giving up early is always
// safe: a failed attempt deletes what it set, as after the node timeout.
func (f *fanout) wait(ctx context.Context, r *round, waitAll bool) {
	if waitAll {
		r.arrived = make([]time.Duration, len(f.nodes))
	}
	maxRefusals := len(f.nodes) - f.quorum
	limit, silence := f.nodeTimeout, error(context.DeadlineExceeded)
	var t *time.Timer
	var tick <-chan struct{} // a generation of f.clock, while the limit is far
	for {
		f.collect(ctx, r)
		if r.got|r.late == r.all64() || !waitAll && (r.oks >= f.quorum || r.noes+len(r.errs) > maxRefusals) {
			break
		}
		if r.cmd.contest && r.noes > 0 && silence != ErrContested {
			limit, silence = min(limit, max(2*time.Since(r.start), contestWait)), ErrContested
			tick = nil // a short limit: a timer of its own
			if t != nil {
				t.Reset(limit - time.Since(r.start))
			}
		}
		if t == nil && tick == nil {
			if left := limit - time.Since(r.start); silence != ErrContested && f.clock.far(left) {
				tick = f.clock.take()
			} else {
				t = timers.Get().(*time.Timer)
				t.Reset(left)
			}
		}
		var timeout <-chan time.Time
		var dying <-chan struct{} // on the clock, dying is seen at the tick
		if t != nil {
			timeout, dying = t.C, f.dying
		}
		var err error
		select {
		case <-r.buf.wake:
			continue
		case <-tick:
			tick = nil // look at the time left again
			if !isClosed(f.dying) {
				continue
			}
			err = ErrClosed
		case <-timeout:
			err = silence
		case <-ctx.Done():
			err = ctx.Err()
		case <-dying:
			err = ErrClosed
		}
		f.collect(ctx, r) // what came meanwhile counts
		f.silent(ctx, r, err)
	}
	if t != nil {
		t.Stop()
		timers.Put(t)
	}
	r.decided = time.Now()
	if f.obs != nil {
		f.obs.undecided(ctx, r)
	}
}

// contestWait is the least a contested attempt waits for its silent
// nodes (fanout.wait): a few round trips of a loaded host.
const contestWait = 5 * time.Millisecond

// collect counts the replies that have arrived since the last look, in
// node order.
func (f *fanout) collect(ctx context.Context, r *round) {
	fresh := r.buf.arrived.Load() &^ (r.got | r.late)
	for i := 0; fresh != 0; i++ {
		if fresh&(1<<i) == 0 {
			continue
		}
		fresh &^= 1 << i
		r.count(i)
		if f.obs != nil {
			f.obs.reply(ctx, r, i)
		}
	}
}

// free hands the round's buffer back once the caller no longer reads its
// slots; the calls still running hold it until they have delivered. A
// round that is never freed is simply collected.
func (r *round) free() {
	if r.buf != nil {
		r.buf.unref()
		r.buf, r.slots = nil, nil
	}
}

// roundBuf holds the calls and reply slots of a round and what has
// arrived in them, recycled: one reference for the caller and one for each
// node's call, which clears its call before it drops its reference.
type roundBuf struct {
	slots []reply
	calls []call // calls[i] carries the round's command to its node i
	// arrived marks the nodes whose reply is in its slot; it is set after
	// the slot is written, so a reader that sees the bit sees the reply.
	arrived atomic.Uint64
	// tally counts the arrived replies: yes in the low 16 bits, refused or
	// failed in the high 16, so that the reply that decides the round is
	// the one that wakes the caller.
	tally  atomic.Uint32
	quorum int
	// contest: the round is an acquire attempt's (command.contest), whose
	// caller is woken by its first refusal too; refused counts the
	// refusals (not the failures) of such a round.
	contest bool
	refused atomic.Int32
	// wake is sent to when the round is decided, when it is complete and,
	// in a contested round, at its first refusal: at most three times (the
	// yes and the refusal that decide exclude each other), so its capacity
	// of 3 never blocks a sender.
	wake chan struct{}
	refs atomic.Int32
}

// roundBufs recycles round buffers by node count.
var roundBufs [maxNodes + 1]sync.Pool

func getRoundBuf(nodes, quorum int, contest bool) *roundBuf {
	b, ok := roundBufs[nodes].Get().(*roundBuf)
	if !ok {
		b = &roundBuf{slots: make([]reply, nodes), calls: make([]call, nodes), wake: make(chan struct{}, 3)}
	}
	b.quorum, b.contest = quorum, contest
	b.refs.Store(int32(nodes + 1))
	return b
}

// arrive marks node i's reply, already in its slot, and wakes the caller
// when this reply decides the round (the quorum-th yes, or the refusal
// that puts a quorum out of reach), is the last one or is a contested
// round's first refusal (refused: the node answered no). A round that
// waits for every node is woken twice at most; one that decides early,
// once, and a contested one once more. Each condition holds for one reply
// only, as the counts are unique to the reply that made them.
func (b *roundBuf) arrive(i uint8, yes, refused bool) {
	b.arrived.Or(1 << i)
	var v uint32
	if yes {
		v = b.tally.Add(1)
	} else {
		v = b.tally.Add(1 << 16)
	}
	oks, refusals := int(v&0xffff), int(v>>16)
	nodes := len(b.slots)
	decides := yes && oks == b.quorum || !yes && refusals == nodes-b.quorum+1
	contested := refused && b.contest && b.refused.Add(1) == 1
	if decides || contested || oks+refusals == nodes {
		b.wake <- struct{}{}
	}
}

// unref drops one reference; the last one clears the buffer (every call
// has delivered, so nothing writes to it any more) and recycles it.
func (b *roundBuf) unref() {
	if b.refs.Add(-1) != 0 {
		return
	}
	clear(b.slots)
	b.arrived.Store(0)
	b.tally.Store(0)
	b.refused.Store(0)
	for len(b.wake) > 0 {
		<-b.wake
	}
	roundBufs[len(b.slots)].Put(b)
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

// byArrival appends the counted nodes' indices to dst in the order their
// replies were counted; only rounds that wait for every node know it.
func (r *round) byArrival(dst []uint8) []uint8 {
	for i := range r.all {
		if r.got&(1<<i) != 0 {
			dst = append(dst, uint8(i))
		}
	}
	slices.SortStableFunc(dst, func(a, b uint8) int { return cmp.Compare(r.arrived[a], r.arrived[b]) })
	return dst
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

// silent gives up on the nodes that have not answered, telling the
// observer.
func (f *fanout) silent(ctx context.Context, r *round, err error) {
	before := r.late
	r.silent(err)
	if f.obs != nil {
		f.obs.silent(ctx, r, r.late&^before, err)
	}
}

// silent counts every node that has not answered as failed with err,
// without touching their slots, which late replies may still write.
func (r *round) silent(err error) {
	for i, n := range r.all {
		if r.got&(1<<i) == 0 && r.late&(1<<i) == 0 {
			r.errs = append(r.errs, n.wrap(err))
			r.late |= 1 << i
		}
	}
}

// refused reports whether node i answered "no" (the key is absent or
// another holder's) in a counted reply.
func (r *round) refused(i int) bool {
	return r.got&(1<<i) != 0 && r.slots[i].err == nil && !r.slots[i].ok
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

// detail describes the round's count on one line and carries its node
// errors for errors.Is and errors.As.
func (r *round) detail(what string, nodes, quorum int) error {
	msg := fmt.Sprintf("%s on %d of %d nodes, quorum %d", what, r.oks, nodes, quorum)
	if len(r.errs) == 0 {
		return &roundError{msg: msg}
	}
	return &roundError{msg: msg, errs: r.errs}
}

// roundError is a round's failure: one line, with the node errors joined
// by "; " and kept for errors.Is and errors.As.
type roundError struct {
	msg  string
	errs []error
}

func (e *roundError) Error() string {
	if len(e.errs) == 0 {
		return e.msg
	}
	parts := make([]string, len(e.errs))
	for i, err := range e.errs {
		parts[i] = detailOf(err)
	}
	return e.msg + ": " + strings.Join(parts, "; ")
}

func (e *roundError) Unwrap() []error { return e.errs }
