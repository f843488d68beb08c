// Package sdlstore is the Shared Data Layer (SDL) of the O-RAN near-RT RIC
// on stock Redis: a Go port of ricsdl's SyncStorage that shares its data
// with ricsdl and sdlgo clients byte for byte, over the same []redlock.Pool
// or []redlock.Node the lock factory uses.
//
// # Namespaces and instances
//
// Every call names a namespace: a non-empty string without ',', '{' or '}'.
// A Store spreads namespaces over its Redis instances by
// crc32.ChecksumIEEE(namespace) % instances, as ricsdl and sdlgo do, so all
// the data, groups, locks and channels of a namespace live on one instance.
//
// # Wire format
//
//   - key K of namespace NS is the Redis string "{NS},K" holding the raw bytes;
//   - group G is a Redis set at "{NS},G" with raw byte members;
//   - channel C is the Redis channel "{NS},C"; the events of one call for one
//     channel are joined with "___" into one message, one PUBLISH per channel,
//     sent only when the write happened;
//   - lock R is "{NS},R" holding a random token with a PX expiry.
//
// # Atomic operations without the DBaaS module
//
// ricsdl relies on a Redis module for SETIE, DELIE, MSETMPUB, SETIEMPUB,
// SETNXMPUB, DELMPUB and DELIEMPUB. This package runs each conditional or
// publishing operation as one Lua script instead, so it works on any Redis 7
// and stays atomic: a notification is published iff its write happened, and
// values are compared byte for byte (NUL bytes included, where the module
// stopped at the first NUL).
//
// FindKeys, FindAndGet and RemoveAll walk the instance with SCAN, never
// KEYS, with the namespace escaped in the pattern.
//
// # Notifications
//
// SubscribeChannel registers a callback for channels of a namespace. Each
// instance has one subscriber connection shared by all channels, PINGed
// every WithHealthCheckInterval; its reader queues messages and callbacks
// run in a listener goroutine (the default) or in HandleEvents
// (WithEventPolling, ricsdl's polling mode). The queue holds at most
// WithEventQueue events; when callbacks fall that far behind, new events
// are dropped and counted (DroppedEvents) rather than stalling the
// connection. A subscriber whose instance restarts, fails over or stops
// answering dials again and resubscribes; events published while it was
// disconnected are lost, as with any Redis pub/sub. On a Store made by
// NewFromNodes the connection is the client's own, opened by the node's
// PubSub (redlock.PubSubNode), with the same health check, resubscription
// and delivery.
//
// # Locks
//
// LockResource returns ricsdl's lock, on any number of instances: SET NX PX
// of "{ns},resource" on the namespace's home instance, as ricsdl and sdlgo
// take it, so the three exclude each other. Lock's doc says why it takes
// no other instance, under which failures two Locks still exclude each
// other, and what happens when the home instance is down. A Lock runs no
// goroutine.
//
// # Errors
//
// Every error matches ErrSDL. Bad input is an ErrInvalidArgument and sends
// nothing; a Redis error reply is an ErrRejectedByBackend; a connection
// failure or an ended context is an ErrNotConnected (on a Store made by
// NewFromNodes, every failure of a node but an error reply of its server);
// anything else an ErrBackend.
//
// # Operations
//
// Namespaces lists the namespaces found on the instances, with their key
// counts; Health reports each instance's role, replicas and DBaaS module
// commands and each sentinel's view of its master, against the node count
// (WithNodeCount, DBAAS_NODE_COUNT); Statistics reads keys, memory,
// clients, load and uptime from INFO. The redlock command's "sdl
// namespaces", "sdl healthcheck" and "sdl statistics" print them.
//
// # Configuration
//
// New takes pools; NewFromEnv reads the DBAAS_* variables of the RIC
// platform, standalone or with Redis Sentinel. NewFromNodes takes the
// redlock.Node values of redlock.NewFactoryFromNodes, so that an xApp that
// already runs go-redis or rueidis clients shares them with the SDL
// (redlockgoredis.Nodes, redlockrueidis.Nodes): every operation runs
// through Node.Do, with the same data, locks and published notifications,
// and subscriptions go over the connections that the nodes' PubSub opens.
// A node that is not a redlock.PubSubNode (a redlock.PoolNode, a go-redis
// Ring's) carries no subscriber connection: SubscribeChannel on its
// instance returns ErrSubscribeUnsupported.
//
// # Observing
//
// WithObserver reports every command a Store sends (operation, namespace,
// instance, duration, error kind) and each subscriber connection going down
// and up again; the otel module (github.com/redlockplus/redlock/otel)
// turns them into OpenTelemetry metrics.
//
// # Testing
//
// The sdltest module (github.com/redlockplus/redlock/sdlstore/sdltest)
// returns a Store on Redis servers embedded in the test process, for unit
// tests of code that uses the SDL.
package sdlstore
