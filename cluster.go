package redlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"

	"github.com/gomodule/redigo/redis"
)

// ClusterNodes returns one Node per master of the Redis Cluster that seeds
// reach, for NewFactoryFromNodes: the masters of one cluster as the voters
// of the quorum. seeds are URLs or host:port addresses of any members; the
// masters are dialled with the first seed's scheme and credentials, and
// opts.
//
// Each node keeps a lock's key in a hash slot its master owns: it puts
// the master's hash tag in front of every key, the smallest decimal number
// whose slot the master owns ("{7}orders:42" on one master, "{0}orders:42"
// on another). Every key of one node shares that slot, so that batch
// extension, MultiLock, fencing and the read-write lock run as on
// independent nodes, and every client that reads the same slot map uses
// the same keys.
//
// A MOVED or ASK reply fails that node's vote for the attempt, and the
// next command of any node reads the slot map again (CLUSTER SLOTS): a
// node follows its master, or the replica promoted in its place, and the
// node guard keeps a node whose master or tag changed out of the vote for
// as long as a restart without persistence (WithRestartGuard). A cluster
// with fewer than 3 masters is refused with an *InsufficientNodesError.
//
// The nodes share the cluster's connection pools; Close on any of them
// closes those (the factory does not: close them after the factory).
func ClusterNodes(ctx context.Context, seeds []string, opts ...redis.DialOption) ([]Node, error) {
	if len(seeds) == 0 {
		return nil, invalidArg("ClusterNodes needs at least one seed address")
	}
	c := &poolCluster{opts: opts, pools: map[string]*redis.Pool{}}
	for i, s := range seeds {
		full, err := nodeURL(s)
		if err != nil {
			return nil, err
		}
		u, err := url.Parse(full)
		if err != nil {
			return nil, invalidArg("seed %q: %v", s, err)
		}
		if i == 0 {
			c.base = *u
		}
		c.seeds = append(c.seeds, u.Host)
	}
	nodes, err := ClusterNodesOf(ctx, c)
	if err != nil {
		c.Close()
	}
	return nodes, err
}

// ClusterNodesOf is ClusterNodes over a client of another library: one
// Node per master of the cluster c reaches, each keeping its keys under
// its master's hash tag. The modules goredis and rueidis call it for their
// cluster clients.
func ClusterNodesOf(ctx context.Context, c ClusterClient) ([]Node, error) {
	if c == nil || isNilValue(c) {
		return nil, invalidArg("ClusterNodesOf: the cluster client is nil")
	}
	v, err := c.Slots(ctx)
	if err != nil {
		return nil, fmt.Errorf("redlock: reading the cluster's slot map: %w", err)
	}
	shards, err := parseShards(redigoValue(v))
	if err != nil {
		return nil, fmt.Errorf("redlock: %w", err)
	}
	if len(shards) < 3 {
		return nil, &InsufficientNodesError{NodeCount: len(shards)}
	}
	if len(shards) > maxNodes {
		return nil, invalidArg("the cluster has %d masters: at most %d are supported", len(shards), maxNodes)
	}
	m := &clusterMap{client: c}
	nodes := make([]Node, len(shards))
	for i := range shards {
		n := &clusterNode{m: m}
		n.place.Store(&noPlace)
		m.nodes = append(m.nodes, n)
		nodes[i] = n
	}
	m.apply(shards)
	return nodes, nil
}

// poolCluster is ClusterNodes' client: a redigo pool per master, dialled
// with the first seed's URL and the caller's options.
type poolCluster struct {
	base  url.URL  // scheme, credentials and database of the first seed
	seeds []string // host:port of every seed
	opts  []redis.DialOption

	mu     sync.Mutex
	pools  map[string]*redis.Pool
	closed bool
}

// Slots asks the masters known and the seeds at once and returns the
// first map one of them gives: a master that hangs (paused, partitioned)
// must not hold up the read that would find its successor.
func (c *poolCluster) Slots(ctx context.Context) (any, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		v   any
		err error
	}
	addrs := c.candidates()
	answers := make(chan answer, len(addrs))
	for _, addr := range addrs {
		go func() {
			p, err := c.pool(addr)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			v, err := PoolNode(p).Do(ctx, "CLUSTER", "SLOTS")
			if err != nil {
				err = fmt.Errorf("%s: %w", addr, err)
			}
			answers <- answer{fillSelf(v, addr), err}
		}()
	}
	var errs []error
	for range addrs {
		a := <-answers
		if a.err == nil {
			return a.v, nil
		}
		errs = append(errs, a.err)
	}
	return nil, errors.Join(errs...)
}

// candidates lists the masters dialled so far, then the seeds.
func (c *poolCluster) candidates() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.pools)+len(c.seeds))
	seen := map[string]bool{}
	for addr := range c.pools {
		out = append(out, addr)
		seen[addr] = true
	}
	for _, s := range c.seeds {
		if !seen[s] {
			out = append(out, s)
		}
	}
	return out
}

// Master returns the pool of the master at addr as a Node.
func (c *poolCluster) Master(addr string) (Node, error) {
	p, err := c.pool(addr)
	if err != nil {
		return nil, err
	}
	return PoolNode(p), nil
}

// pool returns the pool of addr, made on first use.
func (c *poolCluster) pool(addr string) (*redis.Pool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if p := c.pools[addr]; p != nil {
		return p, nil
	}
	u := c.base
	u.Host = addr
	p, err := NewPool(u.String(), c.opts...)
	if err != nil {
		return nil, err
	}
	c.pools[addr] = p
	return p, nil
}

// Close closes every pool.
func (c *poolCluster) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	for _, p := range c.pools {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

// Close closes the connections of the cluster the node belongs to, when
// ClusterNodes made it: every node of that call shares them. It does
// nothing for nodes of ClusterNodesOf, whose client is the caller's.
func (n *clusterNode) Close() error {
	if c, ok := n.m.client.(*poolCluster); ok {
		return c.Close()
	}
	return nil
}

// fillSelf puts the host of addr, the member that answered CLUSTER SLOTS,
// where the reply leaves a node's ip empty: Redis does so for itself when
// it does not know its own address (a cluster of one master).
func fillSelf(v any, addr string) any {
	host, _, err := net.SplitHostPort(addr)
	entries, ok := v.([]any)
	if err != nil || !ok {
		return v
	}
	for _, e := range entries {
		f, _ := e.([]any)
		for _, nd := range f[min(2, len(f)):] {
			if ep, _ := nd.([]any); len(ep) > 0 {
				if ip, isBulk := ep[0].([]byte); isBulk && len(ip) == 0 {
					ep[0] = []byte(host)
				}
			}
		}
	}
	return v
}
