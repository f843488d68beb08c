package redlockotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/redlockplus/redlock"
)

// spanKey marks a context that carries a span this package started, so
// that node replies and ends never touch the caller's own span.
type spanKey struct{}

// startSpan returns the start hook of an operation's span, a child of the
// caller's.
func (o *Observer) startSpan(name string) func(ctx context.Context, lock string) context.Context {
	return func(ctx context.Context, lock string) context.Context {
		ctx, span := o.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("redlock.lock", lock)))
		return context.WithValue(ctx, spanKey{}, span)
	}
}

// ours returns the span this package started for ctx's operation.
func ours(ctx context.Context) (trace.Span, bool) {
	span, ok := ctx.Value(spanKey{}).(trace.Span)
	return span, ok
}

// endSpan ends the operation's span with its outcome.
func (o *Observer) endSpan(ctx context.Context, err error, kv ...attribute.KeyValue) {
	span, ok := ours(ctx)
	if !ok {
		return
	}
	span.SetAttributes(kv...)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// nodeReply adds a node's reply to the operation's span.
func (o *Observer) nodeReply(ctx context.Context, e redlock.NodeReplyEvent) {
	span, ok := ours(ctx)
	if !ok {
		return
	}
	outcome := "refused"
	switch {
	case e.Undecided:
		outcome = "undecided"
	case e.Err != nil:
		outcome = "error"
	case e.OK:
		outcome = "ok"
	}
	span.AddEvent("redlock.node.reply", trace.WithAttributes(
		attribute.Int("redlock.node", e.Node),
		attribute.String("server.address", e.Addr),
		attribute.String("redlock.command", e.Op),
		attribute.String("redlock.reply", outcome),
		attribute.Float64("redlock.latency", e.Latency.Seconds()),
	))
}
