package pubsub

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Defaults of the Config fields left zero.
const (
	// DefaultHealthInterval is how often the connection is PINGed: 5 s.
	DefaultHealthInterval = 5 * time.Second
	// DefaultMinBackoff is the pause after the first failed dial: 100 ms.
	DefaultMinBackoff = 100 * time.Millisecond
	// DefaultMaxBackoff caps the pause between dials: 5 s.
	DefaultMaxBackoff = 5 * time.Second
)

// Config is what a Subscriber needs. Dial or Open is required, not both.
type Config struct {
	// Dial opens a redigo connection to the node. The Subscriber owns it
	// until it closes it; it must support redis.ConnWithContext, as
	// redigo's connections and pooled connections do. ctx carries
	// DialTimeout.
	Dial func(ctx context.Context) (redis.Conn, error)
	// Open opens a pub/sub connection of another client to the node,
	// instead of Dial; the Subscriber owns it until it closes it. ctx
	// carries DialTimeout.
	Open func(ctx context.Context) (Conn, error)

	// Spawn starts the Subscriber's goroutine; false means the owner is
	// shutting down, and New fails with ErrClosed. Default: the go
	// statement. Close waits for the goroutine either way.
	Spawn func(func()) bool

	// OnMessage receives every message of a channel in the set, in the
	// reader goroutine (see the package doc: it must not block). A message
	// of a channel unsubscribed meanwhile is not delivered, but one whose
	// delivery began may end after Unsubscribe returned. Default: ignore.
	OnMessage func(channel string, data []byte)
	// OnKeys receives, like OnMessage, every message of a channel in the
	// set whose payload is an array of keys rather than a string: the
	// invalidations of Redis client-side caching on __redis__:invalidate
	// (CLIENT TRACKING in RESP2 redirect mode). keys is nil when the
	// payload is nil: every key was invalidated (FLUSHALL, FLUSHDB).
	// Default: ignore.
	OnKeys func(channel string, keys []string)
	// OnConfirm is told, in the reader goroutine, each time Redis confirmed
	// a channel of the set on a connection (again after a reconnection).
	// Default: none.
	OnConfirm func(channel string)
	// OnConnect is called, in the reader goroutine, once a new connection
	// answered and every channel in the set when it was made is confirmed
	// on it; reconnect is false the first time only. Default: none.
	OnConnect func(reconnect bool)
	// OnDisconnect is called, in the Subscriber's goroutine, when a dial
	// fails or a connection ends, with the cause; not after Close.
	// Default: none.
	OnDisconnect func(err error)

	// HealthInterval is how often the connection is PINGed; one that
	// answers nothing for two intervals is dropped. Default
	// DefaultHealthInterval. A Dial whose connections have a read timeout
	// shorter than twice the interval makes idle connections fail.
	HealthInterval time.Duration
	// DialTimeout bounds one Dial. Default: twice HealthInterval.
	DialTimeout time.Duration
	// MinBackoff is the pause after a failed dial, doubled on each further
	// failure up to MaxBackoff. Defaults DefaultMinBackoff and
	// DefaultMaxBackoff (or MinBackoff, if that is longer).
	MinBackoff, MaxBackoff time.Duration

	// Logger receives a line when a dial fails, a connection is lost, and a
	// reconnection succeeds. Default: no logging.
	Logger *slog.Logger
}

// resolve returns c with defaults filled in, or an ErrInvalidConfig.
func (c Config) resolve() (Config, error) {
	if (c.Dial == nil) == (c.Open == nil) {
		return c, fmt.Errorf("%w: exactly one of Dial and Open is needed", ErrInvalidConfig)
	}
	var err error
	defaultTo(&c.HealthInterval, DefaultHealthInterval, "HealthInterval", &err)
	defaultTo(&c.DialTimeout, 2*c.HealthInterval, "DialTimeout", &err)
	defaultTo(&c.MinBackoff, DefaultMinBackoff, "MinBackoff", &err)
	defaultTo(&c.MaxBackoff, DefaultMaxBackoff, "MaxBackoff", &err)
	if err != nil {
		return c, err
	}
	c.MaxBackoff = max(c.MaxBackoff, c.MinBackoff)
	if c.Spawn == nil {
		c.Spawn = func(f func()) bool { go f(); return true }
	}
	return c, nil
}

// defaultTo sets a zero duration to def and records a negative one in err.
func defaultTo(d *time.Duration, def time.Duration, name string, err *error) {
	switch {
	case *d < 0 && *err == nil:
		*err = fmt.Errorf("%w: %s %v is negative", ErrInvalidConfig, name, *d)
	case *d == 0:
		*d = def
	}
}
