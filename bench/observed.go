package main

import (
	"context"

	"github.com/gomodule/redigo/redis"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/benchkit"
	redlockotel "github.com/redlockplus/redlock/otel"
)

// noopObserver sets every hook of redlock.Observer to a function that does
// nothing: what building and delivering the events costs, without a
// consumer.
var noopObserver = redlock.Observer{
	AcquireStart: func(ctx context.Context, _ string) context.Context { return ctx },
	AcquireDone:  func(context.Context, redlock.AcquireEvent) {},
	ReleaseStart: func(ctx context.Context, _ string) context.Context { return ctx },
	Released:     func(context.Context, redlock.ReleaseEvent) {},
	Extended:     func(redlock.ExtendEvent) {},
	Lost:         func(redlock.LossEvent) {},
	NodeError:    func(redlock.NodeErrorEvent) {},
	Waiting:      func(redlock.WaitingEvent) {},
	NodeReply:    func(context.Context, redlock.NodeReplyEvent) {},
}

// observedTargets are the -observed targets: this library with the no-op
// observer, and with the otel module's observer recording into an
// OpenTelemetry SDK MeterProvider (metrics only, as a service exporting to
// Prometheus would run it; collection is the exporter's cost, not the
// lock's).
func observedTargets() []target {
	all := func(benchkit.Workload) bool { return true }
	return []target{
		{
			name: "redlock-noop",
			build: func(_ []string, ps []*redis.Pool, _ benchkit.Workload) (benchkit.Target, error) {
				return benchkit.Ours("redlock-noop", lockPools(ps), redlock.WithObserver(noopObserver))
			},
			runs: all,
		},
		{
			name: "redlock-otel",
			build: func(_ []string, ps []*redis.Pool, _ benchkit.Workload) (benchkit.Target, error) {
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				obs, err := redlockotel.New(redlockotel.WithMeterProvider(mp))
				if err != nil {
					return nil, err
				}
				return benchkit.Ours("redlock-otel", lockPools(ps), redlock.WithObserver(obs.Redlock()))
			},
			runs: all,
		},
	}
}
