package sdlstore

import (
	"log/slog"
	"os"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Defaults of the options.
const (
	// DefaultHealthCheckInterval is how often a subscriber connection is
	// PINGed: 5 s. A connection that answers nothing for two intervals is
	// replaced.
	DefaultHealthCheckInterval = 5 * time.Second
	// DefaultReconnectDelay is the first pause before a subscriber dials its
	// instance again after a failure: 100 ms, doubled on each further
	// failure up to MaxReconnectDelay.
	DefaultReconnectDelay = 100 * time.Millisecond
	// MaxReconnectDelay caps the pause between subscriber reconnection
	// attempts: 5 s (or the reconnect delay, if that is longer).
	MaxReconnectDelay = 5 * time.Second
	// DefaultEventQueue is how many received notifications a Store holds
	// for delivery before it drops new ones: 1024.
	DefaultEventQueue = 1024
	// DefaultPort is the Redis port NewFromEnv uses when DBAAS_SERVICE_PORT
	// is unset: 6379.
	DefaultPort = "6379"
)

// Option configures a Store.
type Option func(*config)

// config is the resolved option set of a Store.
type config struct {
	polling        bool
	eventQueue     int
	logger         *slog.Logger
	observer       *Observer // nil: none (observe.go)
	healthInterval time.Duration
	reconnectDelay time.Duration
	lookupEnv      func(string) (string, bool)
	dialOpts       []redis.DialOption
	nodeCount      int
	nodeCountSet   bool // by WithNodeCount, over DBAAS_NODE_COUNT
}

func defaultConfig() config {
	return config{
		healthInterval: DefaultHealthCheckInterval,
		reconnectDelay: DefaultReconnectDelay,
		eventQueue:     DefaultEventQueue,
		lookupEnv:      os.LookupEnv,
		nodeCount:      1,
	}
}

// WithEventPolling selects ricsdl's polling mode: notifications are queued
// until the application takes them with HandleEvents, which runs each
// callback in the caller's goroutine. StartEventListener switches to
// background delivery later. Default: off, so callbacks run in a background
// goroutine as soon as a channel is subscribed (ricsdl's listener mode, and
// sdlgo's only mode).
func WithEventPolling() Option { return func(c *config) { c.polling = true } }

// WithEventQueue bounds how many received notifications wait for delivery,
// across all instances. Default 1024 (DefaultEventQueue); n must be
// positive. When a callback (or, in polling mode, the HandleEvents loop)
// falls that far behind, further notifications are dropped until it catches
// up: each is counted in DroppedEvents, and WithLogger's logger gets one
// line when dropping starts and one when it ends. The subscriber connection
// is never made to wait instead, since that would stall its health check
// and every other channel of the instance; Redis pub/sub delivers at most
// once anyway.
func WithEventQueue(n int) Option { return func(c *config) { c.eventQueue = n } }

// WithLogger sets where the subscribers report lost connections and
// reconnections, and the event queue its overflows. Default: no logging.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithHealthCheckInterval sets how often each subscriber connection is
// PINGed; one that answers nothing for two intervals is closed and dialled
// again. Default 5 s (DefaultHealthCheckInterval). It must be positive. A
// pool whose connections have a read timeout shorter than the interval
// makes idle subscribers reconnect needlessly.
func WithHealthCheckInterval(d time.Duration) Option {
	return func(c *config) { c.healthInterval = d }
}

// WithReconnectDelay sets the first pause before a subscriber dials again
// after its connection failed; it doubles on each further failure, up to
// MaxReconnectDelay. Default 100 ms (DefaultReconnectDelay). It must be
// positive.
func WithReconnectDelay(d time.Duration) Option {
	return func(c *config) { c.reconnectDelay = d }
}

// WithLookupEnv replaces os.LookupEnv as the source of the DBAAS_*
// variables read by NewFromEnv. Default: the process environment.
func WithLookupEnv(lookup func(key string) (string, bool)) Option {
	return func(c *config) { c.lookupEnv = lookup }
}

// WithDialOptions adds redigo dial options (password, TLS, timeouts) to the
// connections NewFromEnv makes to Redis instances. Default: a 5 s connect
// timeout only. New and NewFromNodes ignore it: their pools and nodes are
// already configured.
func WithDialOptions(opts ...redis.DialOption) Option {
	return func(c *config) { c.dialOpts = append(c.dialOpts, opts...) }
}

// WithNodeCount sets how many Redis nodes each instance has (a master and
// its replicas), which Health expects to find: 1 for standalone servers, 3
// for the RIC's high-availability setup. Default 1; NewFromEnv takes it from
// DBAAS_NODE_COUNT, and this option overrides that. It must be positive.
func WithNodeCount(n int) Option { return func(c *config) { c.nodeCount, c.nodeCountSet = n, true } }

// apply returns the defaults with opts applied, validated.
func applyOptions(opts []Option) (config, error) {
	c := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.healthInterval <= 0 {
		return c, invalidArg("health check interval %v is not positive", c.healthInterval)
	}
	if c.reconnectDelay <= 0 {
		return c, invalidArg("reconnect delay %v is not positive", c.reconnectDelay)
	}
	if c.eventQueue <= 0 {
		return c, invalidArg("event queue size %d is not positive", c.eventQueue)
	}
	if c.nodeCount < 1 {
		return c, invalidArg("node count %d is not positive", c.nodeCount)
	}
	if c.lookupEnv == nil {
		return c, invalidArg("lookup function is nil")
	}
	return c, nil
}
