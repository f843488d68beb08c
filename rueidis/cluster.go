package redlockrueidis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"

	"github.com/redis/rueidis"

	"github.com/redlockplus/redlock"
)

// ClusterNodes returns one redlock.Node per master of the Redis Cluster
// that c is a client of, for redlock.NewFactoryFromNodes: the masters of
// one cluster as the voters of the quorum. Each node keeps the keys of a
// lock under its master's hash tag, so that a lock has one key on every
// master, and follows reshards and failovers (redlock.ClusterNodesOf
// places them; see redlock.ClusterNodes for how).
//
// c must be a cluster client (Mode() is rueidis.ClientModeCluster, which
// rueidis.NewClient makes for a server in cluster mode unless
// ForceSingleClient is set); another client is refused with
// redlock.ErrInvalidArgument. The slot map is CLUSTER SLOTS sent through
// c. The commands of a master go through the single-node client that
// c.Nodes() gives for that server, over c's own connection to it, which
// does not follow MOVED or ASK: such a reply fails the master's vote, and
// the nodes read the slot map again. A master that c has no connection to
// yet (it joined the cluster after c's last look) fails its votes until
// then; reading the slot map sends c a read of a key of that master's
// slots, whose redirection makes c connect to it. The nodes open no
// connection of their own, so there is nothing to close but c, which stays
// the caller's: close it after the factory.
//
// ClusterNodes reads the slot map within ctx. A cluster of fewer than 3
// masters is refused with a *redlock.InsufficientNodesError. The factory
// runs the nodes' commands on its node transport: redlock.WithReplicaAck
// is refused over them (it needs the WAIT on the write's own connection,
// which redlock.ClusterNodes' redigo pools give), and blocked Acquire
// calls poll.
func ClusterNodes(ctx context.Context, c rueidis.Client) ([]redlock.Node, error) {
	if isNil(c) {
		return nil, fmt.Errorf("%w: redlockrueidis.ClusterNodes: the client is nil", redlock.ErrInvalidArgument)
	}
	if m := c.Mode(); m != rueidis.ClientModeCluster {
		return nil, fmt.Errorf("%w: redlockrueidis.ClusterNodes: a %s client is not a cluster client (rueidis.NewClient makes one for a server in cluster mode, without ForceSingleClient)", redlock.ErrInvalidArgument, m)
	}
	return redlock.ClusterNodesOf(ctx, &cluster{c: c})
}

// cluster is a rueidis cluster client as the redlock.ClusterClient of
// ClusterNodes.
type cluster struct {
	c rueidis.Client
	// nodes are the nodes of the servers c is connected to, by address,
	// as Slots last read them: a node over each client of c.Nodes().
	nodes atomic.Pointer[map[string]redlock.Node]
}

var _ redlock.ClusterClient = (*cluster)(nil)

// Slots sends CLUSTER SLOTS through the cluster client and keeps a node of
// every server the client is connected to, having made it connect to the
// masters of the reply it did not know (meet).
func (k *cluster) Slots(ctx context.Context) (any, error) {
	v, err := result(k.c.Do(ctx, k.c.B().ClusterSlots().Build()))
	if err != nil {
		return nil, err
	}
	clients := k.c.Nodes()
	met := false
	for addr, slot := range mastersOf(v) {
		if _, ok := clients[addr]; !ok {
			k.meet(ctx, slot)
			met = true
		}
	}
	if met {
		clients = k.c.Nodes()
	}
	nodes := make(map[string]redlock.Node, len(clients))
	for addr, cl := range clients {
		nodes[addr] = node{cl}
	}
	k.nodes.Store(&nodes)
	return v, nil
}

// meet sends the cluster client a read of a key in slot, so that the
// redirection to the slot's master it does not know yet makes it connect
// to that master (and read its slot map again). The reply does not
// matter.
func (k *cluster) meet(ctx context.Context, slot int) {
	for i := range 100_000 { // the numbers below 100,000 hash to every slot
		if tag := strconv.Itoa(i); redlock.ClusterKeySlot(tag) == slot {
			_ = k.c.Do(ctx, k.c.B().Exists().Key("{"+tag+"}").Build()).Error()
			return
		}
	}
}

// Master returns the node of the client that c.Nodes() gives for addr,
// whose commands, batches and pub/sub connections go to that server only.
// A server that the cluster client had no connection to at the last Slots
// gets a node whose commands fail (absent), which makes the nodes read the
// slot map again.
func (k *cluster) Master(addr string) (redlock.Node, error) {
	if m := k.nodes.Load(); m != nil {
		if n, ok := (*m)[addr]; ok {
			return n, nil
		}
	}
	return absent(addr), nil
}

// mastersOf returns the master of every entry of a CLUSTER SLOTS reply,
// {start, end, {ip, port, id, ...}, replicas...}, by address, with a slot
// it owns; entries it cannot read are left out (ClusterNodesOf refuses
// the reply).
func mastersOf(v any) map[string]int {
	out := map[string]int{}
	entries, _ := v.([]any)
	for _, e := range entries {
		f, _ := e.([]any)
		if len(f) < 3 {
			continue
		}
		start, ok1 := f[0].(int64)
		m, _ := f[2].([]any)
		if len(m) < 2 || !ok1 {
			continue
		}
		ip, ok2 := m[0].(string)
		port, ok3 := m[1].(int64)
		if ok2 && ok3 {
			out[net.JoinHostPort(ip, strconv.FormatInt(port, 10))] = int(start)
		}
	}
	return out
}

// absent is the node of a master that the cluster client has no
// connection to. Its commands fail with an error that is not a server's
// reply, so that the nodes read the slot map again before the next.
type absent string

func (a absent) err() error {
	return fmt.Errorf("redlockrueidis: the cluster client has no connection to the master %s yet: reading the slot map again", string(a))
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
// returns for a cluster client (Mode() rueidis.ClientModeCluster). A
// cluster is not one node of a quorum: the keys of a lock's batch and
// MultiLock scripts span its hash slots, which a cluster refuses
// (CROSSSLOT). ClusterNodes makes a node of each master of the cluster
// instead.
var ErrClusterClient = errors.New("redlockrueidis: a rueidis cluster client is a whole cluster, not one node: use redlockrueidis.ClusterNodes, which makes one node per master")

// wholeCluster is the node of a cluster client given to Nodes: every
// command fails with ErrClusterClient, and it neither batches nor
// subscribes. It is a comparable value, as node is.
type wholeCluster struct{ c rueidis.Client }

// Do fails with ErrClusterClient.
func (w wholeCluster) Do(context.Context, string, ...any) (any, error) {
	return nil, ErrClusterClient
}

// RunScript fails with ErrClusterClient.
func (w wholeCluster) RunScript(context.Context, *redlock.Script, []string, ...any) (any, error) {
	return nil, ErrClusterClient
}

// Addr names the cluster by the addresses of the servers the client is
// connected to, sorted and joined by commas.
func (w wholeCluster) Addr() string { return node(w).Addr() }
