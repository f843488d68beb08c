package redlockotel

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/sdlstore"
)

// scope is the instrumentation scope of the meters and tracers.
const scope = "github.com/redlockplus/redlock/otel"

// Observer holds the instruments. It is safe for concurrent use, and one
// Observer may serve any number of factories, locks and stores.
type Observer struct {
	cfg    config
	tracer trace.Tracer // nil: no tracing

	mu   sync.RWMutex
	sets map[optKey]metric.MeasurementOption // see attrs

	acquire, hold            metric.Float64Histogram
	extend, lost, nodeErrors metric.Int64Counter
	waiters, held            metric.Int64UpDownCounter
	outOfVote                metric.Int64UpDownCounter
	voteChanges, risks       metric.Int64Counter
	sdlDuration              metric.Float64Histogram
	sdlErrors, sdlReconnects metric.Int64Counter
}

// Bucket boundaries, in seconds: waits from half a millisecond (an
// uncontended acquisition on a LAN) to a minute, holds up to an hour.
var (
	waitBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	holdBuckets = []float64{0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
)

// New creates the instruments.
func New(opts ...Option) (*Observer, error) {
	o := &Observer{sets: map[optKey]metric.MeasurementOption{}}
	for _, opt := range opts {
		opt(&o.cfg)
	}
	if o.cfg.mp == nil {
		o.cfg.mp = otel.GetMeterProvider()
	}
	if o.cfg.tp != nil {
		o.tracer = o.cfg.tp.Tracer(scope)
	}
	m := o.cfg.mp.Meter(scope)
	var errs []error
	hist := func(name, desc string, buckets []float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(buckets...))
		errs = append(errs, err)
		return h
	}
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	updown := func(name, unit, desc string) metric.Int64UpDownCounter {
		c, err := m.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	o.acquire = hist("redlock.acquire.duration", "Time from an Acquire call to its return, by outcome.", waitBuckets)
	o.hold = hist("redlock.hold.duration", "Time a lock was held, from acquisition to release or loss.", holdBuckets)
	o.extend = counter("redlock.extend", "{extension}", "Extensions of held locks, by outcome.")
	o.lost = counter("redlock.lost", "{loss}", "Locks found lost, by cause.")
	o.nodeErrors = counter("redlock.node.errors", "{error}", "Failed node commands of lock operations, by node and kind.")
	o.waiters = updown("redlock.waiters", "{waiter}", "Acquire calls waiting for another holder's release.")
	o.held = updown("redlock.held", "{lock}", "Locks held by this process.")
	o.outOfVote = updown("redlock.node.out_of_vote", "{node}", "Nodes the node guard keeps out of the vote, by node.")
	o.voteChanges = counter("redlock.node.vote_changes", "{change}", "Nodes leaving (voting=false) and rejoining (voting=true) the vote, by node.")
	o.risks = counter("redlock.node.risks", "{risk}", "Node settings that can break a lock's safety (an evicting maxmemory-policy), by node.")
	o.sdlDuration = hist("sdl.operation.duration", "Time of sdlstore commands.", waitBuckets)
	o.sdlErrors = counter("sdl.operation.errors", "{error}", "Failed sdlstore commands, by kind.")
	o.sdlReconnects = counter("sdl.subscriber.reconnects", "{reconnect}", "Reconnections of sdlstore subscriber connections.")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return o, nil
}

// Redlock returns the observer for redlock.WithObserver.
func (o *Observer) Redlock() redlock.Observer {
	ob := redlock.Observer{
		AcquireDone: o.acquireDone,
		Released:    o.released,
		Extended:    o.extended,
		Lost:        o.lostLock,
		NodeError:   o.nodeError,
		Waiting:     o.waiting,
		NodeVote:    o.nodeVote,
		NodeRisk:    o.nodeRisk,
	}
	if o.tracer != nil {
		ob.AcquireStart = o.startSpan("redlock.acquire")
		ob.ReleaseStart = o.startSpan("redlock.release")
		ob.NodeReply = o.nodeReply
	}
	return ob
}

// SDL returns the observer for sdlstore.WithObserver.
func (o *Observer) SDL() sdlstore.Observer {
	return sdlstore.Observer{Operation: o.sdlOperation, Subscriber: o.sdlSubscriber}
}

// optKey names one attribute set of the lock metrics: the normalised lock
// name and at most one more attribute.
type optKey struct{ lock, k, v string }

// attrs returns the attribute set of a measurement: k=v (unless k is "")
// plus the normalised lock name when WithLockName is given. The sets are
// built once each and kept, since there are few of them (the normaliser
// bounds the names), so that a measurement allocates nothing for them.
func (o *Observer) attrs(lock, k, v string) metric.MeasurementOption {
	key := optKey{k: k, v: v}
	if o.cfg.lockName != nil {
		key.lock = o.cfg.lockName(lock)
	}
	o.mu.RLock()
	opt, ok := o.sets[key]
	o.mu.RUnlock()
	if ok {
		return opt
	}
	var kv []attribute.KeyValue
	if k != "" {
		kv = append(kv, attribute.String(k, v))
	}
	if key.lock != "" {
		kv = append(kv, attribute.String("redlock.lock", key.lock))
	}
	opt = metric.WithAttributeSet(attribute.NewSet(kv...))
	o.mu.Lock()
	o.sets[key] = opt
	o.mu.Unlock()
	return opt
}

func (o *Observer) acquireDone(ctx context.Context, e redlock.AcquireEvent) {
	o.acquire.Record(ctx, e.Waited.Seconds(), o.attrs(e.Lock, "redlock.outcome", e.Outcome.String()))
	if e.Outcome == redlock.Acquired {
		o.held.Add(ctx, 1, o.attrs(e.Lock, "", ""))
	}
	o.endSpan(ctx, e.Err, attribute.String("redlock.outcome", e.Outcome.String()), attribute.Int("redlock.attempts", e.Attempts))
}

func (o *Observer) released(ctx context.Context, e redlock.ReleaseEvent) {
	end := "released"
	if e.Closed {
		end = "closed"
	}
	o.held.Add(ctx, -1, o.attrs(e.Lock, "", ""))
	o.hold.Record(ctx, e.Held.Seconds(), o.attrs(e.Lock, "redlock.end", end))
	o.endSpan(ctx, e.Err)
}

func (o *Observer) extended(e redlock.ExtendEvent) {
	outcome := "ok"
	if !e.OK {
		outcome = "failed"
	}
	o.extend.Add(context.Background(), 1, o.attrs(e.Lock, "redlock.outcome", outcome))
}

func (o *Observer) lostLock(e redlock.LossEvent) {
	ctx := context.Background()
	o.lost.Add(ctx, 1, o.attrs(e.Lock, "redlock.cause", e.Cause.String()))
	o.held.Add(ctx, -1, o.attrs(e.Lock, "", ""))
	o.hold.Record(ctx, e.Held.Seconds(), o.attrs(e.Lock, "redlock.end", "lost"))
}

func (o *Observer) nodeError(e redlock.NodeErrorEvent) {
	o.nodeErrors.Add(context.Background(), 1, metric.WithAttributes(
		attribute.Int("redlock.node", e.Node),
		attribute.String("server.address", e.Addr),
		attribute.String("error.type", e.Kind.String()),
	))
}

func (o *Observer) nodeVote(e redlock.NodeVoteEvent) {
	ctx := context.Background()
	node := metric.WithAttributes(attribute.Int("redlock.node", e.Node), attribute.String("server.address", e.Addr))
	delta := int64(1)
	if e.Voting {
		delta = -1
	}
	o.outOfVote.Add(ctx, delta, node)
	o.voteChanges.Add(ctx, 1, metric.WithAttributes(attribute.Int("redlock.node", e.Node), attribute.String("server.address", e.Addr), attribute.Bool("redlock.voting", e.Voting)))
}

func (o *Observer) nodeRisk(e redlock.NodeRiskEvent) {
	o.risks.Add(context.Background(), 1, metric.WithAttributes(attribute.Int("redlock.node", e.Node), attribute.String("server.address", e.Addr)))
}

func (o *Observer) waiting(e redlock.WaitingEvent) {
	o.waiters.Add(context.Background(), int64(e.Delta), o.attrs(e.Lock, "", ""))
}

func (o *Observer) sdlOperation(ctx context.Context, e sdlstore.OperationEvent) {
	kv := []attribute.KeyValue{
		attribute.String("sdl.operation", e.Op),
		attribute.String("sdl.namespace", e.Namespace),
		attribute.Int("sdl.instance", e.Instance),
	}
	if e.Kind != "" {
		kv = append(kv, attribute.String("error.type", string(e.Kind)))
		o.sdlErrors.Add(ctx, 1, metric.WithAttributes(kv...))
	}
	o.sdlDuration.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(kv...))
}

func (o *Observer) sdlSubscriber(e sdlstore.SubscriberEvent) {
	if e.Up && e.Reconnect {
		o.sdlReconnects.Add(context.Background(), 1, metric.WithAttributes(attribute.Int("sdl.instance", e.Instance)))
	}
}
