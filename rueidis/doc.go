// Package redlockrueidis runs the locks of package redlock over rueidis
// clients the caller already has:
//
//	nodes := redlockrueidis.Nodes(client1, client2, client3)
//	f, err := redlock.NewFactoryFromNodes(nodes)
//	defer f.Close()
//
// Every command goes through the client: Do, and DoMulti for the commands
// that concurrent lock operations start on a node meanwhile
// (redlock.Batcher); scripts are EVALSHA, then EVAL on NOSCRIPT. They all
// go on one of the client's pipelined connections, in the order they were
// sent (a script's keys go in as plain arguments, so that rueidis does not
// pick a connection by their slot), and without the context's deadline, so
// that a command that timed out leaves the connection up (its reply is
// discarded when it comes). Its TLS settings and hooks apply, and the
// factory never closes the clients. Each client
// must reach one independent Redis server; the factory refuses two clients
// of the same server. For a Redis Cluster, see below.
//
// Blocked Acquire calls are woken by the releases of their lock over
// rueidis's pub/sub (redlock.PubSubNode): from the first one that waits,
// the factory keeps one dedicated connection of each client (Dedicate, with
// SetPubSubHooks), PINGs it every second, closes it and opens another when
// it fails, and closes it in Close. Opening it waits for rueidis's dial
// (Dedicate takes no context), so Close may wait up to the client's dial
// timeout while a node does not answer. On RESP3 (Redis 6 and later) the
// PING checks the subscribed connection itself; rueidis runs RESP2
// subscriptions on a connection of their own, which the PING does not
// reach. A Store of sdlstore.NewFromNodes subscribes the same way: one
// dedicated connection per instance, opened by its first SubscribeChannel
// and closed by its Close.
//
// Create the clients with ForceSingleClient: true. Without it
// rueidis.NewClient fails while its node is down, so that a service could
// not start with a minority of its lock nodes down, which Redlock
// tolerates; with it the client connects once the node answers.
// DisableCache: true saves the client-side cache, which the lock never
// reads. Set ConnWriteTimeout to a few node timeouts: rueidis keeps a
// connection after a command's context ended, and only that timeout
// replaces a connection whose replies stopped.
//
// # Redis Cluster
//
// The masters of one Redis Cluster can be the nodes of the quorum, through
// a rueidis client of the cluster (rueidis.NewClient makes a cluster
// client for servers in cluster mode, without ForceSingleClient):
//
//	cc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: seeds, DisableCache: true})
//	nodes, err := redlockrueidis.ClusterNodes(ctx, cc)
//	f, err := redlock.NewFactoryFromNodes(nodes)
//
// ClusterNodes makes one node per master, which keeps a lock's keys under
// that master's hash tag and sends them to that master only, over cc's
// connection to it (cc.Nodes()), without following MOVED or ASK; the nodes
// read the slot map again after a reshard or a failover
// (redlock.ClusterNodes tells how the lock stays exclusive through both).
// A cluster client given to Nodes is refused: its node fails every command
// with ErrClusterClient, since the scripts of a lock's batches and
// MultiLocks span slots, which one cluster client cannot run as one node.
// The nodes of ClusterNodes wake blocked Acquire calls by polling, not
// pub/sub.
//
// valkey-go is a fork of rueidis with types of its own (valkey.Client is not
// a rueidis.Client), so it does not go through this module; Valkey servers
// do, reached with a rueidis client.
//
// This is a module of its own (github.com/redlockplus/redlock/rueidis), so
// that rueidis stays out of the dependencies of package redlock.
package redlockrueidis
