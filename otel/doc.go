// Package redlockotel reports what redlock's locks and sdlstore's stores
// do as OpenTelemetry metrics and traces.
//
// New builds the instruments once; its Redlock method returns the
// redlock.Observer to give to redlock.WithObserver, its SDL method the
// sdlstore.Observer for sdlstore.WithObserver:
//
//	obs, err := redlockotel.New(redlockotel.WithMeterProvider(mp), redlockotel.WithTracerProvider(tp))
//	f, err := redlock.NewFactory(pools, redlock.WithObserver(obs.Redlock()))
//
// # Metrics
//
// Through a metric.MeterProvider (the global one unless WithMeterProvider
// is given), with units in seconds and curly-brace annotations as
// OpenTelemetry's conventions ask:
//
//	redlock.acquire.duration  histogram, s: call to return, by redlock.outcome
//	                          (acquired, refused, no_quorum, context_ended, closed, invalid)
//	redlock.hold.duration     histogram, s: acquisition to release or loss, by redlock.end
//	                          (released, closed, lost)
//	redlock.extend            counter: extensions, by redlock.outcome (ok, failed)
//	redlock.lost              counter: losses, by redlock.cause (expired, extend_refused, check_refused, with_set, detected)
//	redlock.node.errors       counter: node failures, by redlock.node (index), server.address
//	                          and error.type (timeout, refused, error_reply, script_missing, other, not_voting)
//	redlock.node.out_of_vote  up-down counter: nodes the node guard keeps out of the vote, by node
//	redlock.node.vote_changes counter: nodes leaving and rejoining the vote, by node and redlock.voting
//	redlock.node.risks        counter: risky node settings (an evicting maxmemory-policy), by node
//	redlock.waiters           up-down counter: Acquire calls waiting for a holder
//	redlock.held              up-down counter: holdings of this process
//	sdl.operation.duration    histogram, s: sdlstore commands, by sdl.operation,
//	                          sdl.namespace, sdl.instance and error.type (on failure)
//	sdl.operation.errors      counter: failed sdlstore commands, same attributes
//	sdl.subscriber.reconnects counter: subscriber reconnections, by sdl.instance
//
// Lock names are not an attribute by default: names such as order:81723
// would make one series per order. WithLockName adds the attribute
// redlock.lock with the value a normaliser returns (order:81723 -> order),
// leaving it out when the normaliser returns "".
//
// # Traces
//
// With WithTracerProvider, every Acquire (TryAcquire, AcquireOrExtend's
// acquisition) and every Release gets a span, redlock.acquire or
// redlock.release, a child of the span in the caller's context. Each span
// has an event redlock.node.reply per node and attempt: node, address,
// command, outcome (ok, refused, error, undecided) and latency. Without a
// tracer provider no span is started and no node reply is timed.
//
// The Prometheus exporter of OpenTelemetry (go.opentelemetry.io/otel/
// exporters/prometheus) serves these as redlock_acquire_duration_seconds
// and so on; see the example of New.
package redlockotel
