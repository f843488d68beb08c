package conformance

import (
	"testing"

	"github.com/redlockplus/redlock"
)

// Client makes lock nodes of one Redis client.
type Client struct {
	// Name names the client in subtest names.
	Name string
	// Nodes returns one node per address (host:port), in order. The
	// clients behind them are closed by t.Cleanup; their commands must
	// honour the deadline of their context.
	Nodes func(t *testing.T, addrs []string) []redlock.Node
}

// factory makes a factory over c's nodes to addrs, closed when the test
// ends.
func (c Client) factory(t *testing.T, addrs []string, opts ...redlock.Option) *redlock.Factory {
	t.Helper()
	f, err := redlock.NewFactoryFromNodes(c.Nodes(t, addrs), opts...)
	if err != nil {
		t.Fatalf("%s: NewFactoryFromNodes: %v", c.Name, err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Redigo is the root module's own client: one redlock.NewPool per node,
// as redlock.PoolNode.
var Redigo = Client{
	Name:  "redigo",
	Nodes: func(t *testing.T, addrs []string) []redlock.Node { return redigoNodes(t, addrs) },
}

// redigoNodes are Redigo's nodes, for tests and benchmarks.
func redigoNodes(tb testing.TB, addrs []string) []redlock.Node {
	nodes := make([]redlock.Node, len(addrs))
	for i, a := range addrs {
		p, err := redlock.NewPool("redis://" + a)
		if err != nil {
			tb.Fatalf("NewPool: %v", err)
		}
		tb.Cleanup(func() { p.Close() })
		nodes[i] = redlock.PoolNode(p)
	}
	return nodes
}
