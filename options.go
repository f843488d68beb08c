package redlock

import (
	"log/slog"
	"math"
	"time"
)

// Defaults of the lock options, as in redlock_plus where it has them.
const (
	// DefaultTTL is how long a lock's keys live on the nodes: 120 s.
	DefaultTTL = 120 * time.Second
	// DefaultRetryTimes is how many times TryAcquire retries after its first
	// attempt: 3, so 4 attempts in all.
	DefaultRetryTimes = 3
	// DefaultRetryDelay is the upper bound of the random pause between two
	// attempts: 200 ms.
	DefaultRetryDelay = 200 * time.Millisecond
	// DefaultDriftFactor is the share of the TTL reserved for clock drift
	// between nodes: 0.01, so drift = ttl*0.01 + 2 ms.
	DefaultDriftFactor = 0.01
	// minNodeTimeout and maxNodeTimeout bound the default node timeout. The
	// floor is above the Redis specification's 5-50 ms because scheduling
	// and GC pauses on a busy host exceed 50 ms, and a timeout that fires on
	// a healthy node turns load into failed locks.
	minNodeTimeout = 100 * time.Millisecond
	maxNodeTimeout = time.Second
)

// driftFloor is the constant part of the drift allowance (redlock_plus's 2 ms).
const driftFloor = 2 * time.Millisecond

// Option configures a lock or a factory. Options given to a factory are the
// defaults of every lock it creates; options given to NewLock override them.
type Option func(*config)

// config is the resolved option set of one lock.
type config struct {
	ttl               time.Duration
	retryTimes        int
	retryDelay        time.Duration
	driftFactor       float64
	nodeTimeout       time.Duration
	nodeTimeoutSet    bool // else derived from the ttl
	quorum            int  // 0: N/2+1
	quorumSet         bool
	autoextend        *bool // nil: the lock kind's default
	autoextendTimeout time.Duration
	logger            *slog.Logger
	fencing           bool      // fence.go
	observer          *Observer // nil: none (observe.go)
	pipelining        bool      // factory-level
	wakeups           bool      // factory-level
	lossDetection     bool      // factory-level (lossdetection.go)
	restartGuard      time.Duration
	restartGuardSet   bool // else the lock's TTL (guardoptions.go)
	clockGuard        time.Duration
	clockGuardSet     bool   // else half the drift allowance
	replicaAck        int    // factory-level (replicaack.go)
	factoryOnly       string // the first factory-level option given, by name
}

func defaultConfig() config {
	return config{
		ttl:         DefaultTTL,
		retryTimes:  DefaultRetryTimes,
		retryDelay:  DefaultRetryDelay,
		driftFactor: DefaultDriftFactor,
		pipelining:  true,
		wakeups:     true,

		lossDetection: true,
	}
}

// WithTTL sets how long the lock's keys live on each node. Default 120 s
// (DefaultTTL). It is rounded down to whole milliseconds and must then be
// above its own drift allowance, ttl*DriftFactor + 2 ms: at least 3 ms
// with the default drift factor.
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithRetryTimes sets how many times TryAcquire retries after a failed
// attempt. Default 3 (DefaultRetryTimes), so 4 attempts; 0 means one attempt.
// Acquire retries until its context ends and ignores it.
func WithRetryTimes(n int) Option { return func(c *config) { c.retryTimes = n } }

// WithRetryDelay sets the upper bound of the random pause between attempts;
// each pause is drawn uniformly from [0, d] so that contending clients fall
// out of step. Default 200 ms (DefaultRetryDelay). It must not be negative.
func WithRetryDelay(d time.Duration) Option { return func(c *config) { c.retryDelay = d } }

// WithDriftFactor sets the share of the TTL reserved for clock drift:
// drift = ttl*f + 2 ms is subtracted from every validity. Default 0.01
// (DefaultDriftFactor). It must be in [0, 1).
func WithDriftFactor(f float64) Option { return func(c *config) { c.driftFactor = f } }

// WithNodeTimeout bounds every command sent to one node, so that a dead or
// hung node cannot stall an attempt. Default: 1% of the TTL, at least 100 ms
// and at most 1 s (1 s for the default TTL), and never above half the TTL.
// It must be positive and below the TTL.
func WithNodeTimeout(d time.Duration) Option {
	return func(c *config) { c.nodeTimeout, c.nodeTimeoutSet = d, true }
}

// WithQuorum sets how many nodes must agree. Default N/2+1 for N nodes (2 of
// 3, 3 of 5), as in the Redis specification; redlock_plus uses max(3, N/2+1),
// which needs all of 3 nodes, so that one node down stops every lock. It
// must be above N/2, so that two holders can never both have a quorum, and
// at most N.
func WithQuorum(q int) Option { return func(c *config) { c.quorum, c.quorumSet = q, true } }

// WithAutoextend sets whether a successful Acquire starts the autoextend
// goroutine, which extends the lock at 3/4 of its validity until Release.
// Default true for Lock and false for RLock, as in redlock_plus.
func WithAutoextend(on bool) Option { return func(c *config) { c.autoextend = &on } }

// WithAutoextendTimeout stops automatic extension after d; the lock then
// expires at the end of its last validity. Default 0: extend until Release.
// It must not be negative.
func WithAutoextendTimeout(d time.Duration) Option {
	return func(c *config) { c.autoextendTimeout = d }
}

// WithLogger sets where the locks report, with the attributes lock, node,
// attempts, waited and err: at Warn the loss of a lock, failed extensions,
// incomplete releases and deletes the cleanup queue had to drop; at Info
// an Acquire that gave up; at Debug every acquisition and node error.
// Default: no logging.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithPipelining sets whether a Factory's locks send their commands to each
// node over one shared, auto-pipelined connection (true, the default) or
// borrow a pool connection per command (false). Pipelining writes the
// commands of concurrent lock operations as one batch and keeps the per-call
// cost low; the pool path is kept for comparison and for pools that must not
// have a connection held. It applies to NewFactory and NewFactoryFromURLs
// only: locks made by NewLock and NewRLock always use the pool path, and
// giving it to one lock is an ErrInvalidArgument.
func WithPipelining(on bool) Option {
	return func(c *config) { c.pipelining = on; c.factoryOnlyGiven("WithPipelining") }
}

// WithWakeups sets whether a blocked Acquire of a Factory's lock waits for
// the holder's release notification (true, the default) instead of polling.
// Release publishes on a per-lock channel, and the factory holds one
// subscriber connection per node, dialled with the *redis.Pool's dial
// function or opened by a PubSubNode (NewFactoryFromNodes); with other Pool
// types and Nodes, and for locks made by NewLock, Acquire polls. A waiter
// that hears nothing (the holder crashed, or another client deleted the
// key) retries after the jittered retry delay, capped by the key's
// remaining time to live. Like WithPipelining, it is factory-level:
// giving it to one lock is an ErrInvalidArgument.
func WithWakeups(on bool) Option {
	return func(c *config) { c.wakeups = on; c.factoryOnlyGiven("WithWakeups") }
}

// factoryOnlyGiven notes that the factory-level option name was given.
func (c *config) factoryOnlyGiven(name string) {
	if c.factoryOnly == "" {
		c.factoryOnly = name
	}
}

// WithLossDetection sets whether a Factory's held locks learn within
// milliseconds that their keys were deleted, expired or overwritten on a
// quorum of nodes (true, the default), instead of at their next extension
// or CheckTimes. It uses Redis client-side caching in RESP2 redirect mode:
// per node, one more subscriber connection listens on
// __redis__:invalidate, and the factory's command connection runs CLIENT
// TRACKING on REDIRECT to it, so the node announces every change of a key
// the lock wrote. An announced change is checked on every node, for many
// locks at once; when fewer than a quorum still hold the token, the
// holding ends with ErrLockLost (Done closes), as after a refused
// extension. It is a hint that shortens the time to notice a loss; the
// guarantee is still the validity (docs/SAFETY.md). It works on the
// pipelined path of NewFactory and NewFactoryFromURLs (and
// NewFactoryFromNodes over PoolNodes of *redis.Pool); with
// WithPipelining(false), other Pool types, or nodes of other clients it
// does nothing, and a loss is noticed as before. Either way a plain
// attempt is SET NX PX: on, each holding is checked once 10 ms after it
// began, which makes the nodes track its key (a lock released sooner costs
// nothing more), and a loss before that check is found by it. Off, no
// connection is added and tracking stays off. On, each node keeps a record
// of every held lock's key in its tracking table, about 98 B per lock and
// node (Redis 7.0) beside the key itself: a service that holds very many
// locks may trade the early notice for that memory (BENCHMARKS.md, S2).
// Like WithPipelining, it is factory-level: giving it to one lock is an
// ErrInvalidArgument.
func WithLossDetection(on bool) Option {
	return func(c *config) {
		c.lossDetection = on
		c.factoryOnlyGiven("WithLossDetection")
	}
}

// apply returns base with opts applied.
func (c config) apply(opts []Option) config {
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// minTTL is the least TTL that validate accepts with drift factor f in
// [0, 1): the least whole number of milliseconds above its own drift
// allowance, ttl*f + 2 ms (3 ms for the default 0.01).
func minTTL(f float64) time.Duration {
	bound := float64(driftFloor) / (1 - f)
	if bound >= float64(math.MaxInt64/2) {
		return math.MaxInt64 // f so close to 1 that no TTL is above its drift
	}
	c := config{driftFactor: f}
	c.ttl = max(time.Duration(bound).Truncate(time.Millisecond)-time.Millisecond, time.Millisecond)
	for c.ttl <= c.drift() {
		c.ttl += time.Millisecond
	}
	return c.ttl
}

// drift is the clock-drift allowance subtracted from every validity.
func (c *config) drift() time.Duration {
	return time.Duration(float64(c.ttl)*c.driftFactor) + driftFloor
}

// validUntil is the end of the validity of keys whose round started at
// start: the TTL less the drift allowance, counted from before the first
// command was sent. It is the one formula of the validity; validity and
// validityAt read it at a moment.
func (c *config) validUntil(start time.Time) time.Time { return start.Add(c.ttl - c.drift()) }

// validityAt is what is left at t of the validity of a round started at
// start.
func (c *config) validityAt(start, t time.Time) time.Duration { return c.validUntil(start).Sub(t) }

// validity is what is left of it when round r was decided.
func (c *config) validity(r *round) time.Duration { return c.validityAt(r.start, r.decided) }

// ttlMs is the TTL as sent to Redis.
func (c *config) ttlMs() int64 { return c.ttl.Milliseconds() }

// validate checks the options against a node count and fills the derived
// defaults (node timeout, quorum).
func (c *config) validate(nodes int) error {
	if nodes < 3 {
		return &InsufficientNodesError{NodeCount: nodes}
	}
	if c.driftFactor < 0 || c.driftFactor >= 1 || c.driftFactor != c.driftFactor {
		return invalidArg("drift factor %v is not in [0, 1)", c.driftFactor)
	}
	if least := minTTL(c.driftFactor); c.ttl.Truncate(time.Millisecond) < least {
		return invalidArg("ttl %v is below %v, the least ttl above its own drift allowance (ttl*%v + 2ms)",
			c.ttl, least, c.driftFactor)
	}
	c.ttl = c.ttl.Truncate(time.Millisecond)
	if c.retryTimes < 0 {
		return invalidArg("retry times %d is negative", c.retryTimes)
	}
	if c.retryDelay < 0 {
		return invalidArg("retry delay %v is negative", c.retryDelay)
	}
	if c.autoextendTimeout < 0 {
		return invalidArg("autoextend timeout %v is negative", c.autoextendTimeout)
	}
	if !c.nodeTimeoutSet {
		c.nodeTimeout = min(max(c.ttl/100, minNodeTimeout), maxNodeTimeout, c.ttl/2)
	}
	if c.nodeTimeout <= 0 || c.nodeTimeout >= c.ttl {
		return invalidArg("node timeout %v must be positive and below the ttl %v", c.nodeTimeout, c.ttl)
	}
	if err := c.validateGuard(); err != nil {
		return err
	}
	if c.replicaAck < 0 || c.replicaAck > maxReplicaAck {
		return invalidArg("replica ack %d is not in [0, %d]", c.replicaAck, maxReplicaAck)
	}
	if !c.quorumSet {
		c.quorum = nodes/2 + 1
	}
	if c.quorum <= nodes/2 || c.quorum > nodes {
		return invalidArg("quorum %d is not in (%d, %d] for %d nodes", c.quorum, nodes/2, nodes, nodes)
	}
	return nil
}

// lockConfig resolves one lock's options over the factory's defaults. A
// factory-level option given to one lock is an ErrInvalidArgument, as is
// any invalid value; the config is usable for the lock's fields either way.
func (f *Factory) lockConfig(opts []Option) (config, error) {
	base := f.defaults
	base.factoryOnly = ""
	cfg := base.apply(opts)
	if cfg.factoryOnly != "" {
		return cfg, invalidArg("%s is a factory option; it cannot be given to one lock", cfg.factoryOnly)
	}
	return cfg, cfg.validate(len(f.nodes))
}
