package redlocktest

import (
	"fmt"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
)

// Client is one client's own way to the nodes: a proxy per node of its
// own, so that a fault set on a Client cuts off or slows down that client
// alone, while the others (through the Cluster's own Pools, or other
// Clients) still reach the node. It is how a test partitions a lock holder
// away from the majority while its competitors can still get there.
//
// Kill, Restart, Pause and Unpause act on the nodes, so every Client sees
// them; a Client's proxies follow a restarted node.
type Client struct {
	c       *Cluster
	name    string
	proxies []*faultProxy
	pools   []*redis.Pool
}

// NewClient returns a Client with a new proxy in front of every node. It
// is removed with the cluster at test cleanup.
func (c *Cluster) NewClient() *Client {
	c.tb.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := &Client{c: c, name: fmt.Sprintf("client%d", len(c.clients)+1)}
	for i, p := range c.proxies {
		fp, err := newFaultProxy(p.target())
		if err != nil {
			cl.close()
			c.tb.Fatalf("redlocktest: NewClient: node %d: %v", i, err)
		}
		if c.state[i] == stateKilled {
			fp.refuse()
		}
		cl.proxies = append(cl.proxies, fp)
		pool, err := newNodePool(fp.addr, c.gens[i])
		if err != nil {
			cl.close()
			c.tb.Fatalf("redlocktest: NewClient: node %d: %v", i, err)
		}
		cl.pools = append(cl.pools, pool)
	}
	c.clients = append(c.clients, cl)
	return cl
}

func (cl *Client) close() {
	for _, p := range cl.pools {
		_ = p.Close()
	}
	for _, p := range cl.proxies {
		p.close()
	}
}

// Pools returns the client's pool of every node, in node order; see
// Cluster.Pools.
func (cl *Client) Pools() []redlock.Pool {
	out := make([]redlock.Pool, len(cl.pools))
	for i, p := range cl.pools {
		out[i] = p
	}
	return out
}

// URLs returns the redis:// URL of every node as this client reaches it.
func (cl *Client) URLs() []string {
	out := make([]string, len(cl.proxies))
	for i, p := range cl.proxies {
		out[i] = "redis://" + p.addr
	}
	return out
}

// check fails the test unless i is a node index.
func (cl *Client) check(op string, i int) {
	cl.c.tb.Helper()
	if i < 0 || i >= len(cl.proxies) {
		cl.c.tb.Fatalf("redlocktest: %s %s(%d): no such node; the cluster has nodes 0 to %d", cl.name, op, i, len(cl.proxies)-1)
	}
}

func (cl *Client) fail(op string, i int, err error) {
	cl.c.tb.Helper()
	cl.c.tb.Fatalf("redlocktest: %s %s(%d): %v", cl.name, op, i, err)
}

// Partition cuts this client off from node i; see Cluster.Partition.
func (cl *Client) Partition(i int) {
	cl.c.tb.Helper()
	cl.check("Partition", i)
	if err := cl.proxies[i].partition(); err != nil {
		cl.fail("Partition", i, err)
	}
}

// Heal removes every network fault between this client and node i.
func (cl *Client) Heal(i int) {
	cl.c.tb.Helper()
	cl.check("Heal", i)
	cl.proxies[i].heal()
}

// Delay holds back node i's replies to this client by d; see Cluster.Delay.
func (cl *Client) Delay(i int, d time.Duration) {
	cl.c.tb.Helper()
	cl.check("Delay", i)
	if d < 0 {
		cl.fail("Delay", i, fmt.Errorf("negative delay %v", d))
	}
	if err := cl.proxies[i].setDelay(d); err != nil {
		cl.fail("Delay", i, err)
	}
}

// CutReplies loses node i's replies to this client; see Cluster.CutReplies.
func (cl *Client) CutReplies(i int) {
	cl.c.tb.Helper()
	cl.check("CutReplies", i)
	if err := cl.proxies[i].cut(); err != nil {
		cl.fail("CutReplies", i, err)
	}
}
