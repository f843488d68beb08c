package redlockotel

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Option configures New.
type Option func(*config)

type config struct {
	mp       metric.MeterProvider
	tp       trace.TracerProvider
	lockName func(string) string
}

// WithMeterProvider sets where the metrics go. Default: the global
// MeterProvider (otel.GetMeterProvider).
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// WithTracerProvider turns tracing on: spans for Acquire and Release with
// an event per node reply. Default: no tracing, and no node reply is timed.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithLockName adds the lock name to the metrics as the attribute
// redlock.lock, through normalise, which must map the names to a small set
// (for example "order:81723" to "order"); a name it maps to "" gets no
// attribute. Default: no lock attribute, since raw names have unbounded
// cardinality. Spans always carry the full name.
func WithLockName(normalise func(name string) string) Option {
	return func(c *config) { c.lockName = normalise }
}
