// Package redlockgoredis runs the locks of package redlock over go-redis v9
// clients the caller already has:
//
//	nodes := redlockgoredis.Nodes(client1, client2, client3)
//	f, err := redlock.NewFactoryFromNodes(nodes)
//	defer f.Close()
//
// Every command goes through the client's Do, EvalSha and Eval, so its
// hooks, TLS settings, pool and instrumentation see the lock's commands;
// the factory never closes the clients. Each client must reach one
// independent Redis server (a *redis.Client, or a failover client of a
// Sentinel group); the factory refuses two clients of the same server. For
// a Redis Cluster, see below.
//
// Create the clients with ContextTimeoutEnabled: true. Without it go-redis
// ignores the deadline that the factory gives each command and waits for
// its own ReadTimeout (3 s by default) on a hung node, so that a lock
// operation still returns early (it needs a quorum only) but Close waits
// until those reads give up.
//
// MaxRetries: -1 is advised too: a command that go-redis repeats after a
// lost reply (a SET that did run) reads as a refusal, which is safe but
// costs the lock an attempt. So is DialerRetries: 1: by default go-redis
// dials a node that refuses connections five times, 100 ms apart, so that
// a command to a node that is down waits out the node timeout instead of
// failing at once, and contending attempts that all wait on it split the
// other nodes between them.
//
// The commands that concurrent lock operations start on a node go out as
// go-redis pipelines (redlock.Batcher), one at a time per node and in
// the same order on every node, so that contending attempts do not split
// the nodes between them.
//
// Blocked Acquire calls are woken by the releases of their lock over
// go-redis's pub/sub (redlock.PubSubNode): from the first one that waits,
// the factory keeps one PubSub of each client (client.Subscribe), PINGs it
// every second, closes it and opens another when it fails, and closes it
// in Close. A *redis.Ring is not a PubSubNode: it would subscribe on the
// shard of the channel's name while a release publishes on the shard of
// the lock's key, so its waiters poll.
//
// # Redis Cluster
//
// The masters of one Redis Cluster can be the nodes of the quorum:
//
//	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, ContextTimeoutEnabled: true})
//	nodes, err := redlockgoredis.ClusterNodes(ctx, cc)
//	f, err := redlock.NewFactoryFromNodes(nodes)
//
// ClusterNodes makes one node per master, which keeps a lock's keys under
// that master's hash tag and sends them to that master only, over the
// client cc keeps for it (which the hooks of cc.OnNewNode see, and those
// of cc.AddHook do not), without following MOVED or ASK; the nodes read
// the slot map again after a reshard or a failover (redlock.ClusterNodes
// tells how the lock stays exclusive through both). A *redis.ClusterClient
// given to Nodes is refused: its node fails every command with
// ErrClusterClient, since the scripts of a lock's batches and MultiLocks
// span slots, which one cluster client cannot run as one node. The nodes
// of ClusterNodes wake blocked Acquire calls by polling, not pub/sub.
//
// A Store of sdlstore.NewFromNodes subscribes the same way: one PubSub per
// instance, opened by its first SubscribeChannel and closed by its Close
// (a *redis.Ring's node cannot: ErrSubscribeUnsupported).
//
// This is a module of its own (github.com/redlockplus/redlock/goredis), so
// that go-redis stays out of the dependencies of package redlock.
package redlockgoredis
