package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// ClusterClient is a client of one Redis Cluster, as ClusterNodesOf needs
// it. The modules goredis and rueidis implement it over their cluster
// clients; ClusterNodes uses one over redigo pools.
type ClusterClient interface {
	// Slots runs CLUSTER SLOTS on a live member of the cluster and returns
	// its reply, in a Node's reply forms.
	Slots(ctx context.Context) (any, error)
	// Master returns the Node of the master at addr (host:port, as CLUSTER
	// SLOTS names it). Its commands go to that server only and must not
	// follow MOVED or ASK: the lock reads those replies as a failed vote,
	// and reads the slot map again.
	Master(addr string) (Node, error)
}

// clusterNode is one voter of a quorum over a Redis Cluster: the keys of
// every lock on one master, in the slot of that master's hash tag
// (clusterslot.go). Every key of a command gets the tag in front ("{7}"
// before "orders:42"), so that a script's keys share one slot and the N
// keys of a lock land on N distinct masters.
type clusterNode struct {
	m     *clusterMap
	place atomic.Pointer[place]
	// moved is when, on monotonic(), this client saw the node's master or
	// tag change (a failover, a reshard); 0: never. The node guard keeps
	// the node out of the vote for a while after (nodeGuard.young).
	moved atomic.Int64
	// epoch counts the changes of the node's place, so that a pipelined
	// connection to an earlier master is replaced (pipeline.Config.Epoch).
	epoch atomic.Uint64
}

// errNoMaster fails the commands of a node for which the cluster has no
// master left (fewer masters than nodes, after a reshard emptied one).
var errNoMaster = errors.New("the cluster has no master left for this node: every master already holds another node's keys")

// Addr names the node's master now.
func (n *clusterNode) Addr() string {
	if p := n.place.Load(); p.addr != "" {
		return p.addr
	}
	return "(no master)"
}

// Do runs a plain command on the node's master, its key tagged.
func (n *clusterNode) Do(ctx context.Context, name string, args ...any) (any, error) {
	p, nd, err := n.target(ctx)
	if err != nil {
		return nil, err
	}
	v, err := nd.Do(ctx, name, taggedArgs(p.prefix, name, args)...)
	n.saw(err)
	return v, err
}

// RunScript runs a lock script on the node's master, its keys tagged.
func (n *clusterNode) RunScript(ctx context.Context, s *Script, keys []string, args ...any) (any, error) {
	p, nd, err := n.target(ctx)
	if err != nil {
		return nil, err
	}
	tagged := make([]string, len(keys))
	for i, k := range keys {
		tagged[i] = p.prefix + k
	}
	v, err := nd.RunScript(ctx, s, tagged, taggedScriptArgs(p.prefix, s.in, args)...)
	n.saw(err)
	return v, err
}

// PubSub opens a pub/sub connection to the node's master, for the
// factory's wake-ups, when the master's Node can (a PubSubNode).
func (n *clusterNode) PubSub(ctx context.Context) (PubSubConn, error) {
	_, nd, err := n.target(ctx)
	if err != nil {
		return nil, err
	}
	ps, ok := nd.(PubSubNode)
	if !ok {
		return nil, fmt.Errorf("the Node of master %s cannot open a pub/sub connection", n.Addr())
	}
	return ps.PubSub(ctx)
}

// canPubSub reports whether the node's master can open a pub/sub
// connection: its client's Node is a PubSubNode.
func (n *clusterNode) canPubSub() bool {
	p := n.place.Load()
	if p.reachable() != nil {
		return false
	}
	nd, err := n.m.client.Master(p.addr)
	_, ok := nd.(PubSubNode)
	return err == nil && ok
}

// target returns the node's place and its master's Node, reading the slot
// map first when it is stale (a failure to read it leaves the places as
// they were: the command then fails or succeeds on its own).
func (n *clusterNode) target(ctx context.Context) (*place, Node, error) {
	if n.m.stale.Load() {
		_ = n.m.refresh(ctx) // ctx is bounded by the node timeout
	}
	p := n.place.Load()
	if err := p.reachable(); err != nil {
		n.m.stale.Store(true)
		return nil, nil, err
	}
	nd, err := n.m.client.Master(p.addr)
	if err != nil {
		n.m.stale.Store(true)
	}
	return p, nd, err
}

// saw marks the slot map stale after a redirection or a failure to reach
// the master: either may mean that its slots moved.
func (n *clusterNode) saw(err error) {
	if err == nil {
		return
	}
	var re ReplyError
	var rr redis.Error
	if (errors.As(err, &re) || errors.As(err, &rr)) && !redirected(err) {
		return // the master answered
	}
	n.m.stale.Store(true)
}

// fresh reads the slot map first when it is stale, within timeout.
func (n *clusterNode) fresh(ctx context.Context, timeout time.Duration) {
	if !n.m.stale.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	_ = n.m.refresh(ctx)
}

// tag returns the key prefix of the node now, "{tag}".
func (n *clusterNode) tag() string { return n.place.Load().prefix }

// keyFirst are the plain commands the lock sends whose first argument is a
// key.
var keyFirst = []string{"SET", "GET", "PTTL", "DEL", "EXISTS", "PEXPIRE"}

// taggedArgs returns the arguments of a plain command with its key, or
// the lock name in a release channel, under prefix.
func taggedArgs(prefix, name string, args []any) []any {
	if len(args) == 0 {
		return args
	}
	first, ok := args[0].(string)
	if !ok {
		return args
	}
	switch up := strings.ToUpper(name); {
	case slices.Contains(keyFirst, up):
		first = prefix + first
	case up == "PUBLISH" && strings.HasPrefix(first, releaseChannelPrefix):
		first = releaseChannelPrefix + prefix + first[len(releaseChannelPrefix):]
	default:
		return args
	}
	out := slices.Clone(args)
	out[0] = first
	return out
}

// taggedScriptArgs returns a script's arguments with the key prefixes
// among them under prefix: rw_write derives its readers' keys from its
// fifth argument.
func taggedScriptArgs(prefix string, s *script, args []any) []any {
	if s == nil || s.name != rwWriteScript.name || len(args) < 5 {
		return args
	}
	out := slices.Clone(args)
	if k, ok := out[4].(string); ok {
		out[4] = prefix + k
	}
	return out
}

// tagged returns the arguments of cmd as written to a cluster node under
// prefix, in a new slice: a script's hash, key count, tagged keys and
// arguments, or a plain command's tagged arguments.
func (cmd *command) tagged(prefix string) []any {
	if cmd.script == nil {
		return taggedArgs(prefix, cmd.name, cmd.args)
	}
	out := make([]any, len(cmd.args))
	copy(out, cmd.args[:2])
	for i, k := range cmd.args[2 : 2+cmd.nkeys] {
		out[2+i] = prefix + k.(string) // keys are strings by construction
	}
	rest := taggedScriptArgs(prefix, cmd.script, cmd.args[2+cmd.nkeys:])
	copy(out[2+cmd.nkeys:], rest)
	return out
}

// clusterPool is a pooled cluster node (ClusterNodes) as the Pool of a
// pipelined transport: it dials the node's master of the moment.
type clusterPool struct {
	n *clusterNode
	c *poolCluster
}

// clusterPoolOf returns nd as a clusterPool when it is a node of
// ClusterNodes, whose masters are redigo pools.
func clusterPoolOf(nd Node) (clusterPool, bool) {
	cn, ok := nd.(*clusterNode)
	if !ok {
		return clusterPool{}, false
	}
	c, ok := cn.m.client.(*poolCluster)
	return clusterPool{n: cn, c: c}, ok
}

// GetContext borrows a connection to the node's master.
func (p clusterPool) GetContext(ctx context.Context) (redis.Conn, error) {
	return p.open(ctx, (*redis.Pool).GetContext)
}

// dial opens a connection of its own to the node's master, outside the
// pool, for a subscriber.
func (p clusterPool) dial(ctx context.Context) (redis.Conn, error) {
	return p.open(ctx, func(rp *redis.Pool, ctx context.Context) (redis.Conn, error) { return rp.DialContext(ctx) })
}

// open gets a connection to the node's master from its pool with get; a
// failure marks the slot map stale, since the master may have moved.
func (p clusterPool) open(ctx context.Context, get func(*redis.Pool, context.Context) (redis.Conn, error)) (redis.Conn, error) {
	rp, err := p.masterPool(ctx)
	if err != nil {
		return nil, err
	}
	conn, err := get(rp, ctx)
	if err != nil {
		p.n.m.stale.Store(true)
	}
	return conn, err
}

// masterPool returns the pool of the node's master, reading the slot map
// first when it is stale.
func (p clusterPool) masterPool(ctx context.Context) (*redis.Pool, error) {
	if p.n.m.stale.Load() {
		_ = p.n.m.refresh(ctx)
	}
	pl := p.n.place.Load()
	if err := pl.reachable(); err != nil {
		p.n.m.stale.Store(true)
		return nil, err
	}
	return p.c.pool(pl.addr)
}

// Addr names the node's master now.
func (p clusterPool) Addr() string { return p.n.Addr() }
