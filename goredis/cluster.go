package redlockgoredis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/redlockplus/redlock"
)

// ClusterNodes returns one redlock.Node per master of the Redis Cluster
// that c is a client of, for redlock.NewFactoryFromNodes: the masters of
// one cluster as the voters of the quorum. Each node keeps the keys of a
// lock under its master's hash tag, so that a lock has one key on every
// master, and follows reshards and failovers (redlock.ClusterNodesOf
// places them; see redlock.ClusterNodes for how).
//
// The slot map is CLUSTER SLOTS sent through c. The commands of a master
// go through the *redis.Client that c keeps for that server (the clients
// of ForEachShard), which does not follow MOVED or ASK: such a reply fails
// the master's vote, and the nodes read the slot map again, c's own
// included. So the nodes open no connection of their own: they use c's
// pools and options, and the hooks that c.OnNewNode puts on its node
// clients (not those of c.AddHook, which see the slot map's reads only).
// There is nothing to close but c, which stays the caller's: close it
// after the factory.
//
// ClusterNodes reads the slot map within ctx. A cluster of fewer than 3
// masters is refused with a *redlock.InsufficientNodesError, and a client
// whose servers are not in cluster mode by the error of CLUSTER SLOTS. The
// factory runs the nodes' commands on its node transport:
// redlock.WithReplicaAck is refused over them (it needs the WAIT on the
// write's own connection, which redlock.ClusterNodes' redigo pools give),
// and blocked Acquire calls poll.
func ClusterNodes(ctx context.Context, c *redis.ClusterClient) ([]redlock.Node, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: redlockgoredis.ClusterNodes: the cluster client is nil", redlock.ErrInvalidArgument)
	}
	return redlock.ClusterNodesOf(ctx, &cluster{c: c})
}

// cluster is a *redis.ClusterClient as the redlock.ClusterClient of
// ClusterNodes.
type cluster struct {
	c *redis.ClusterClient
	// nodes are the nodes of the servers of c's slot map, by address,
	// as Slots last read them: a subNode over the client c keeps for each.
	// c closes the client of a server that has left its slot map for a
	// minute; the commands of its node then fail, and the nodes read the
	// slot map again, which replaces them.
	nodes atomic.Pointer[map[string]redlock.Node]
}

var _ redlock.ClusterClient = (*cluster)(nil)

// Slots sends CLUSTER SLOTS through the cluster client, then reloads the
// client's own slot map (ForEachShard reads it before it calls its
// function), so that its node clients include every master of the reply
// unless the cluster changed in between, and keeps those clients.
func (k *cluster) Slots(ctx context.Context) (any, error) {
	v, err := reply(k.c.Do(ctx, "CLUSTER", "SLOTS").Result())
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	nodes := map[string]redlock.Node{}
	err = k.c.ForEachShard(ctx, func(_ context.Context, cl *redis.Client) error {
		n := subNode{node{cl}}
		o := cl.Options()
		mu.Lock()
		defer mu.Unlock()
		nodes[o.Addr] = n
		if o.NodeAddress != "" { // as CLUSTER SLOTS names it, when go-redis dials another
			nodes[o.NodeAddress] = n
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	k.nodes.Store(&nodes)
	return v, nil
}

// Master returns the node of the client that the cluster client keeps for
// addr: a subNode, whose commands, batches and pub/sub connections go to
// that server only. A server that the cluster client's slot map did not
// have at the last Slots gets a node whose commands fail (absent), which
// makes the nodes read the slot map again.
func (k *cluster) Master(addr string) (redlock.Node, error) {
	if m := k.nodes.Load(); m != nil {
		if n, ok := (*m)[addr]; ok {
			return n, nil
		}
	}
	return absent(addr), nil
}

// absent is the node of a master that the cluster client keeps no client
// of: its slot map was older than the one the nodes read. Its commands
// fail with an error that is not a server's reply, so that the nodes read
// the slot map again (and the cluster client its own) before the next.
type absent string

func (a absent) err() error {
	return fmt.Errorf("redlockgoredis: the cluster client has no client of the master %s yet: reading the slot map again", string(a))
}

// Do fails.
func (a absent) Do(context.Context, string, ...any) (any, error) { return nil, a.err() }

// RunScript fails.
func (a absent) RunScript(context.Context, *redlock.Script, []string, ...any) (any, error) {
	return nil, a.err()
}

// Addr names the master.
func (a absent) Addr() string { return string(a) }

// ErrClusterClient is the error of every command of the node that Nodes
// returns for a *redis.ClusterClient. A cluster is not one node of a
// quorum: the keys of a lock's batch and MultiLock scripts span its hash
// slots, which a cluster refuses (CROSSSLOT). ClusterNodes makes a node
// of each master of the cluster instead.
var ErrClusterClient = errors.New("redlockgoredis: a *redis.ClusterClient is a whole cluster, not one node: use redlockgoredis.ClusterNodes, which makes one node per master")

// wholeCluster is the node of a *redis.ClusterClient given to Nodes: every
// command fails with ErrClusterClient. It is a comparable value, as node
// is.
type wholeCluster struct{ c *redis.ClusterClient }

// Do fails with ErrClusterClient.
func (w wholeCluster) Do(context.Context, string, ...any) (any, error) {
	return nil, ErrClusterClient
}

// RunScript fails with ErrClusterClient.
func (w wholeCluster) RunScript(context.Context, *redlock.Script, []string, ...any) (any, error) {
	return nil, ErrClusterClient
}

// Addr names the cluster by the client's seed addresses, joined by commas.
func (w wholeCluster) Addr() string { return strings.Join(w.c.Options().Addrs, ",") }
