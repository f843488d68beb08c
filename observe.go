package redlock

import (
	"context"
	"errors"
	"log/slog"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Observer receives what the locks do: acquisitions, releases, extensions,
// losses, node faults and blocked waiters, for metrics, traces or logs
// (the otel module turns them into OpenTelemetry instruments and spans).
// Every field is optional: a nil func is skipped, and fields added in later
// versions are nil in existing literals, so an Observer written today keeps
// compiling and working.
//
// The funcs run synchronously in the goroutine of the operation (the
// extender's and its expiry timer's for background events), so they must
// be quick and must not call the lock. They may run concurrently.
type Observer struct {
	// AcquireStart is called when an Acquire, TryAcquire or
	// AcquireOrExtend's acquisition begins. The context it returns is the
	// one the acquisition runs under, and the one AcquireDone and
	// NodeReply receive: a tracer starts a span here.
	AcquireStart func(ctx context.Context, lock string) context.Context
	// AcquireDone is called once when an acquisition ends, with the
	// context AcquireStart returned.
	AcquireDone func(ctx context.Context, e AcquireEvent)
	// ReleaseStart is called when a Release of a live holding begins (not
	// for one that returns an error at once); see AcquireStart.
	ReleaseStart func(ctx context.Context, lock string) context.Context
	// Released is called when a holding ends by Release or Factory.Close.
	// ctx is what ReleaseStart returned, or a background context for
	// Close.
	Released func(ctx context.Context, e ReleaseEvent)
	// Extended is called after every extension, by Extend or autoextend.
	Extended func(e ExtendEvent)
	// Lost is called once when a holding is found lost, just after Done
	// is closed.
	Lost func(e LossEvent)
	// NodeError is called for every node that failed a command of a lock
	// operation: a timeout, a refused connection, an error reply, or a
	// script the node no longer had (the command then succeeded with EVAL).
	NodeError func(e NodeErrorEvent)
	// Waiting is called when an Acquire starts and stops waiting for the
	// lock to be released by another holder: Delta is +1, then -1.
	Waiting func(e WaitingEvent)
	// NodeReply is called for every node reply counted in the lock's
	// quorum rounds (acquire attempts, release, Extend, CheckTimes), and
	// for every node given up on or not needed, with the operation's context: for an
	// acquisition or a release, the one AcquireStart or ReleaseStart
	// returned. The latency is measured only when this func is set.
	NodeReply func(ctx context.Context, e NodeReplyEvent)
	// NodeVote is called when the node guard takes a node out of the vote
	// (Voting false, with the reason) and when the node votes again
	// (Voting true); see WithRestartGuard and WithClockGuard.
	NodeVote func(e NodeVoteEvent)
	// NodeRisk is called once per node for a setting of the node that can
	// break a lock's safety, such as a maxmemory-policy that may evict
	// keys with a TTL.
	NodeRisk func(e NodeRiskEvent)
}

// WithObserver sets the observer of the lock's operations; given to a
// factory, it also observes the factory's batched autoextension. Default:
// none. Without an observer and a logger no event is built; see
// BENCHMARKS.md for what one costs.
func WithObserver(o Observer) Option { return func(c *config) { c.observer = &o } }

// AcquireOutcome is how an acquisition ended.
type AcquireOutcome uint8

// The outcomes of an acquisition.
const (
	// Acquired: the lock is held.
	Acquired AcquireOutcome = iota
	// Refused: the attempts failed because another holder had the lock
	// (or contenders split the vote).
	Refused
	// NoQuorum: the last attempt failed because too few nodes answered.
	NoQuorum
	// ContextEnded: the caller's context was cancelled or expired.
	ContextEnded
	// Closed: the factory closed.
	Closed
	// Invalid: the call was refused before talking to the nodes (an
	// invalid lock or a second Acquire while held).
	Invalid
)

var outcomeNames = [...]string{"acquired", "refused", "no_quorum", "context_ended", "closed", "invalid"}

// String returns the outcome as a lower-case metric attribute value.
func (o AcquireOutcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// AcquireEvent describes a finished acquisition.
type AcquireEvent struct {
	Lock     string
	Attempts int           // attempts made on the nodes
	Waited   time.Duration // from the call to its return
	Outcome  AcquireOutcome
	Err      error // nil when acquired
}

// ReleaseEvent describes the end of a holding by Release or Close.
type ReleaseEvent struct {
	Lock   string
	Held   time.Duration // from acquisition to release
	Closed bool          // released by Factory.Close
	Err    error         // nil when a quorum confirmed the delete
}

// ExtendEvent describes one extension.
type ExtendEvent struct {
	Lock string
	OK   bool
	Auto bool  // by autoextension
	Err  error // nil when OK
}

// LossCause says how a lost holding was found lost.
type LossCause uint8

// The causes of a loss.
const (
	// LossExpired: the validity ran out unextended.
	LossExpired LossCause = iota
	// LossExtendRefused: an extension found the token gone from a quorum.
	LossExtendRefused
	// LossCheckRefused: CheckTimes found the token gone from a quorum.
	LossCheckRefused
	// LossWithSet: another name of the same MultiLock was lost (or could
	// not be kept), so the set gave this one up.
	LossWithSet
	// LossDetected: loss detection (WithLossDetection) heard that the key
	// changed on a node, and its check found the token gone from a quorum.
	LossDetected
)

var lossNames = [...]string{"expired", "extend_refused", "check_refused", "with_set", "detected"}

// String returns the cause as a lower-case metric attribute value.
func (c LossCause) String() string {
	if int(c) < len(lossNames) {
		return lossNames[c]
	}
	return "unknown"
}

// LossEvent describes a lost holding.
type LossEvent struct {
	Lock  string
	Cause LossCause
	Held  time.Duration // from acquisition to the loss
	Err   error         // what Lock.Err returns
}

// NodeErrorKind classifies a node failure.
type NodeErrorKind uint8

// The kinds of node failure.
const (
	// NodeTimeout: the node did not answer within the node timeout.
	NodeTimeout NodeErrorKind = iota
	// NodeRefused: the connection was refused (the server is down).
	NodeRefused
	// NodeErrorReply: the node answered with an error.
	NodeErrorReply
	// NodeScriptMissing: the node had lost the scripts (a restart or
	// SCRIPT FLUSH); they were sent again.
	NodeScriptMissing
	// NodeOther: any other failure (a broken connection, a closed one).
	NodeOther
	// NodeNotVoting: the node answered yes, but the node guard kept it
	// out of the vote (ErrNotVoting).
	NodeNotVoting
)

var kindNames = [...]string{"timeout", "refused", "error_reply", "script_missing", "other", "not_voting"}

// String returns the kind as a lower-case metric attribute value.
func (k NodeErrorKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// NodeErrorEvent describes one node's failure in a lock operation.
type NodeErrorEvent struct {
	Lock string // "" for a batched autoextension of several locks
	Node int    // index in the node list
	Addr string
	Kind NodeErrorKind
	Err  error
}

// WaitingEvent says that an Acquire started (+1) or stopped (-1) waiting
// for another holder's release.
type WaitingEvent struct {
	Lock  string
	Delta int
}

// NodeReplyEvent describes one node's reply in a quorum round.
type NodeReplyEvent struct {
	Lock string
	Op   string // "set", "release", "extend", "check", "pttl", or a script's name, such as "check_many" (the loss detector's checks) and "extend_many" (batched autoextension)
	Node int
	Addr string
	OK   bool  // the node did what was asked
	Err  error // the node's failure, or nil
	// Undecided: the round reached its outcome without this node's reply
	// (it came later, or never); OK and Err say nothing then.
	Undecided bool
	Latency   time.Duration // from sending the command to counting the reply
}

// observer is the resolved Observer and logger of one lock (or of the
// factory's extender). A nil *observer means neither is set: every hook
// site tests for nil first, so that no event is built when nobody listens.
type observer struct {
	Observer
	log  *slog.Logger
	lock string
}

// newObserver returns nil when cfg has neither an observer nor a logger.
func newObserver(cfg *config, lock string) *observer {
	if cfg.observer == nil && cfg.logger == nil {
		return nil
	}
	ob := &observer{log: cfg.logger, lock: lock}
	if cfg.observer != nil {
		ob.Observer = *cfg.observer
	}
	return ob
}

// released reports the end of holding h by Release (ctx from
// ReleaseStart) or Close.
func (ob *observer) released(ctx context.Context, h *holding, closed bool, err error) {
	if ob == nil {
		return
	}
	e := ReleaseEvent{Lock: ob.lock, Held: h.held(), Closed: closed, Err: err}
	if ob.Released != nil {
		ob.Released(ctx, e)
	}
	if ob.log != nil && err != nil {
		ob.log.Warn("redlock: release incomplete", "lock", ob.lock, "held", e.Held, "err", err)
	}
}

// extended reports an extension of lock (which may differ from ob.lock for
// the factory's extender).
func (ob *observer) extended(lock string, auto bool, err error) {
	if ob == nil {
		return
	}
	if ob.Extended != nil {
		ob.Extended(ExtendEvent{Lock: lock, OK: err == nil, Auto: auto, Err: err})
	}
	if ob.log != nil && err != nil {
		ob.log.Warn("redlock: extend failed", "lock", lock, "auto", auto, "err", err)
	}
}

// lost reports the loss of holding h.
func (ob *observer) lost(lock string, h *holding, cause LossCause, err error) {
	if ob == nil {
		return
	}
	e := LossEvent{Lock: lock, Cause: cause, Held: h.held(), Err: err}
	if ob.Lost != nil {
		ob.Lost(e)
	}
	if ob.log != nil {
		ob.log.Warn("redlock: lock lost", "lock", lock, "cause", cause.String(), "held", e.Held, "err", err)
	}
}

// waiting reports a waiter starting (+1) or stopping (-1).
func (ob *observer) waiting(lock string, delta int) {
	if ob != nil && ob.Waiting != nil {
		ob.Waiting(WaitingEvent{Lock: lock, Delta: delta})
	}
}

// delivered reports a node's failure when its reply arrives, whether or
// not the round still waits for it: a hung node fails late, after the
// round decided without it.
func (ob *observer) delivered(n *node, rep *reply) {
	switch {
	case rep.err != nil:
		ob.nodeError(n, rep.err, errorKind(rep.err))
	case rep.reloaded:
		ob.nodeError(n, nil, NodeScriptMissing)
	}
}

// reply reports node i's counted reply in round r to a tracer.
func (ob *observer) reply(ctx context.Context, r *round, i int) {
	rep := &r.slots[i]
	n := r.all[i]
	if ob.NodeReply != nil {
		ob.NodeReply(ctx, NodeReplyEvent{Lock: ob.lock, Op: r.cmd.opName(), Node: i, Addr: n.address(), OK: rep.ok, Err: rep.err, Latency: time.Since(r.start)})
	}
}

// undecided reports to a tracer the nodes a round decided without: their
// replies are neither counted nor given up on.
func (ob *observer) undecided(ctx context.Context, r *round) {
	if ob.NodeReply == nil {
		return
	}
	pending := r.all64() &^ (r.got | r.late)
	for i, n := range r.all {
		if pending&(1<<i) != 0 {
			ob.NodeReply(ctx, NodeReplyEvent{Lock: ob.lock, Op: r.cmd.opName(), Node: i, Addr: n.address(), Undecided: true, Latency: time.Since(r.start)})
		}
	}
}

// silent reports the nodes in mask, given up on because of err, to a
// tracer. Their failure, if any, is reported when it is delivered.
func (ob *observer) silent(ctx context.Context, r *round, mask uint64, err error) {
	if ob.NodeReply == nil {
		return
	}
	for i, n := range r.all {
		if mask&(1<<i) != 0 {
			ob.NodeReply(ctx, NodeReplyEvent{Lock: ob.lock, Op: r.cmd.opName(), Node: i, Addr: n.address(), Err: n.wrap(err), Latency: time.Since(r.start)})
		}
	}
}

// nodeError reports one node failure.
func (ob *observer) nodeError(n *node, err error, kind NodeErrorKind) {
	if ob.NodeError != nil {
		ob.NodeError(NodeErrorEvent{Lock: ob.lock, Node: n.index, Addr: n.address(), Kind: kind, Err: err})
	}
	if ob.log != nil {
		ob.log.Debug("redlock: node error", "lock", ob.lock, "node", n.address(), "kind", kind.String(), "err", err)
	}
}

// errorKind classifies a node's failure.
func errorKind(err error) NodeErrorKind {
	var reply redis.Error
	switch {
	case isNoScript(err):
		return NodeScriptMissing
	case errors.Is(err, ErrNotVoting):
		return NodeNotVoting
	case errors.As(err, &reply):
		return NodeErrorReply
	case errors.Is(err, syscall.ECONNREFUSED):
		return NodeRefused
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return NodeTimeout
	}
	return NodeOther
}

// isTimeout reports a network timeout (a net.Error's Timeout).
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// opName names a command in node reply events.
func (c *command) opName() string {
	switch {
	case c.script == releaseScript:
		return "release"
	case c.name == "SET", c.script == acquireScript.guarded:
		return "set"
	case c.script != nil:
		return c.script.name
	}
	return "pttl"
}

// processStart anchors monotonic.
var processStart = time.Now()

// monotonic is the time since the process started, on the monotonic
// clock: a holding keeps its start in 8 bytes rather than a time.Time's 24.
func monotonic() time.Duration { return time.Since(processStart) }

// onMonotonic is t on the clock of monotonic().
func onMonotonic(t time.Time) time.Duration { return t.Sub(processStart) }

// held is how long the holding has lasted.
func (h *holding) held() time.Duration { return monotonic() - h.begun }
