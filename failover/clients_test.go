package failover

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/redlockplus/redlock"
	redlockgoredis "github.com/redlockplus/redlock/goredis"
	redlockrueidis "github.com/redlockplus/redlock/rueidis"
)

// clientEnv picks the client that the library's factories use: "redigo"
// (the default: the pools themselves), "goredis" or "rueidis" (a client of
// that library per node, at the pool's address, so that the same proxies
// inject the same faults).
const clientEnv = "REDLOCK_FAILOVER_CLIENT"

// nodesFor returns the nodes of the client that clientEnv names for pools.
// Pools that are not plain redigo pools (the fast-clock wrappers of the
// sensitivity tests) stay redigo pools.
func nodesFor(t *testing.T, pools []redlock.Pool) []redlock.Node {
	t.Helper()
	addrs := make([]string, len(pools))
	for i, p := range pools {
		if _, plain := p.(*redis.Pool); !plain {
			return poolNodes(pools)
		}
		addrs[i] = redlock.PoolNode(p).Addr()
	}
	switch c := clientName(); c {
	case "redigo":
		return poolNodes(pools)
	case "goredis":
		return goredisNodes(t, addrs)
	case "rueidis":
		return rueidisNodes(t, addrs)
	default:
		t.Fatalf("%s=%q: want redigo, goredis or rueidis", clientEnv, c)
		return nil
	}
}

// clientName is the client that clientEnv names: redigo when unset.
func clientName() string {
	if c := os.Getenv(clientEnv); c != "" {
		return c
	}
	return "redigo"
}

// otherClients are the clients that TestSafety also runs the
// client-sensitive scenarios over (overOtherClients), besides redigo's
// pools.
var otherClients = []string{"goredis", "rueidis"}

func poolNodes(pools []redlock.Pool) []redlock.Node {
	nodes := make([]redlock.Node, len(pools))
	for i, p := range pools {
		nodes[i] = redlock.PoolNode(p)
	}
	return nodes
}

// goredisNodes makes go-redis clients that honour the factory's deadlines
// and never repeat a command or a dial on their own.
func goredisNodes(t *testing.T, addrs []string) []redlock.Node {
	clients := make([]goredis.UniversalClient, len(addrs))
	for i, a := range addrs {
		c := goredis.NewClient(&goredis.Options{Addr: a, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
		t.Cleanup(func() { _ = c.Close() })
		clients[i] = c
	}
	return redlockgoredis.Nodes(clients...)
}

// rueidisNodes makes rueidis clients that never repeat a command on their
// own, that exist although their node is down or partitioned away at the
// start (ForceSingleClient: they connect once it answers), and that drop a
// connection whose replies stopped (ConnWriteTimeout). rueidis keeps a
// connection after a command's context ended (the adapter sees to it);
// the proxies drop bytes inside live connections while partitioned, and
// reset those connections when the partition heals, since a connection
// carried on across the gap would pair later replies with earlier
// commands.
func rueidisNodes(t *testing.T, addrs []string) []redlock.Node {
	clients := make([]rueidis.Client, len(addrs))
	for i, a := range addrs {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{a}, ForceSingleClient: true,
			DisableCache: true, DisableRetry: true, Dialer: net.Dialer{Timeout: time.Second},
			ConnWriteTimeout: 500 * time.Millisecond})
		if c == nil {
			t.Fatalf("rueidis.NewClient(%s): %v", a, err)
		}
		t.Cleanup(c.Close)
		clients[i] = c
	}
	return redlockrueidis.Nodes(clients...)
}
