package sdlstore

import (
	"context"
	"errors"
	"time"
)

// Observer receives what a Store does, for metrics or traces (the otel
// module turns it into OpenTelemetry instruments). Every field is optional:
// a nil func is skipped, and fields added later are nil in existing
// literals. The funcs run synchronously in the goroutine of the operation
// (Subscriber in a subscriber's goroutine), so they must be quick.
type Observer struct {
	// Operation is called after every command a Store sends to an
	// instance: once per operation, or once per chunk of a large one.
	Operation func(ctx context.Context, e OperationEvent)
	// Subscriber is called when an instance's subscriber connection comes
	// up (again) or goes down.
	Subscriber func(e SubscriberEvent)
}

// WithObserver sets the Store's observer. Default: none.
func WithObserver(o Observer) Option { return func(c *config) { c.observer = &o } }

// OperationEvent describes one command of a Store operation.
type OperationEvent struct {
	Op        string // the operation, as in error messages: "set", "get members", "lock acquire"
	Namespace string // "" for commands of no namespace (health, statistics)
	Instance  int
	Duration  time.Duration
	Kind      ErrorKind // "" when it succeeded
	Err       error
}

// SubscriberEvent describes a subscriber connection coming up or going
// down.
type SubscriberEvent struct {
	Instance  int
	Up        bool  // the connection is up and its channels confirmed
	Reconnect bool  // up again after a failure (false the first time)
	Err       error // why it went down
}

// ErrorKind names the sentinel an error matches, as a metric attribute.
type ErrorKind string

// The error kinds, one per sentinel of the package.
const (
	KindRejected     ErrorKind = "rejected_by_backend"
	KindNotConnected ErrorKind = "not_connected"
	KindBackend      ErrorKind = "backend"
	KindClosed       ErrorKind = "closed"
	KindInvalid      ErrorKind = "invalid_argument"
)

// KindOf returns the kind of an error of this package, "" for nil.
func KindOf(err error) ErrorKind {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrInvalidArgument):
		return KindInvalid
	case errors.Is(err, ErrClosed):
		return KindClosed
	case errors.Is(err, ErrRejectedByBackend):
		return KindRejected
	case errors.Is(err, ErrNotConnected):
		return KindNotConnected
	}
	return KindBackend
}

// observe reports one command; err points at its mapped error.
func (s *Store) observe(ctx context.Context, in *instance, ns, op string, start time.Time, err *error) {
	if f := s.cfg.observer.Operation; f != nil {
		f(ctx, OperationEvent{Op: op, Namespace: ns, Instance: in.index, Duration: time.Since(start), Kind: KindOf(*err), Err: *err})
	}
}

// observeSubscriber reports a subscriber connection's change.
func (s *Store) observeSubscriber(in *instance, up, reconnect bool, err error) {
	if s.cfg.observer != nil && s.cfg.observer.Subscriber != nil {
		s.cfg.observer.Subscriber(SubscriberEvent{Instance: in.index, Up: up, Reconnect: reconnect, Err: err})
	}
}
