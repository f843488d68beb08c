package redlockgoredis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockplus/redlock"
	redlockgoredis "github.com/redlockplus/redlock/goredis"
	"github.com/redlockplus/redlock/internal/testkit/conformance"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// ctxT is a context that ends after d or with the test.
func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newClusterClient is a go-redis cluster client of seeds, with the
// settings the package doc advises.
func newClusterClient(seeds []string) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 seeds,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialerRetries:         1,
	})
}

// goredisCluster is ClusterNodes over a new go-redis cluster client.
var goredisCluster = conformance.ClusterClient{
	Name: "go-redis",
	Nodes: func(ctx context.Context, seeds []string) ([]redlock.Node, func(), error) {
		c := newClusterClient(seeds)
		nodes, err := redlockgoredis.ClusterNodes(ctx, c)
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		return nodes, func() { c.Close() }, nil
	},
}

// TestClusterNodes: over a 3-master cluster the nodes are its masters,
// each lock has one key on each (conformance.ClusterPlacement); the nodes
// refuse WithReplicaAck; and the master nodes that ClusterNodes builds on
// do not follow redirects, and batch and subscribe on their server.
func TestClusterNodes(t *testing.T) {
	rc := redistest.StartRedisCluster(t, 3, 0)
	conformance.ClusterPlacement(t, rc, goredisCluster)
	c := newClusterClient(rc.Seeds())
	defer c.Close()
	nodes, err := redlockgoredis.ClusterNodes(ctxT(t, 10*time.Second), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("no replica acknowledgement", func(t *testing.T) {
		if _, err := redlock.NewFactoryFromNodes(nodes, redlock.WithReplicaAck(1)); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("WithReplicaAck(1) over the nodes: %v, want ErrInvalidArgument, as the package doc says", err)
		}
	})
	t.Run("master nodes", func(t *testing.T) {
		conformance.ClusterMasterNodes(t, rc, redlockgoredis.ClusterClientOf(c))
	})
}

// TestClusterReshardKeepsExclusion: conformance.ClusterReshard over
// go-redis cluster clients.
func TestClusterReshardKeepsExclusion(t *testing.T) {
	conformance.ClusterReshard(t, goredisCluster)
}

// TestNodesRefusesClusterClient: Nodes makes of a *redis.ClusterClient a
// node whose every command fails with ErrClusterClient, whose text points
// to ClusterNodes; a factory over such nodes fails its attempts with it.
func TestNodesRefusesClusterClient(t *testing.T) {
	var clients []redis.UniversalClient
	for range 3 {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: exampleAddrs})
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	conformance.ClusterClientRefused(t, redlockgoredis.Nodes(clients...), redlockgoredis.ErrClusterClient, "redlockgoredis.ClusterNodes")
}

// TestClusterNodesBadInput: a nil cluster client, and one whose servers
// are not in cluster mode.
func TestClusterNodesBadInput(t *testing.T) {
	ctx := ctxT(t, 10*time.Second)
	if _, err := redlockgoredis.ClusterNodes(ctx, nil); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("a nil client: %v, want ErrInvalidArgument", err)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: exampleAddrs[:1]})
	defer c.Close()
	if _, err := redlockgoredis.ClusterNodes(ctx, c); err == nil || !strings.Contains(err.Error(), "cluster") {
		t.Errorf("a standalone server: %v, want the refusal of CLUSTER SLOTS", err)
	}
}
