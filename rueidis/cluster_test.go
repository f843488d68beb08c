package redlockrueidis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/conformance"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
	redlockrueidis "github.com/redlockplus/redlock/rueidis"
)

// ctxT is a context that ends after d or with the test.
func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// clusterClient is a rueidis cluster client of rc, closed when the test
// ends.
func clusterClient(t *testing.T, rc *redistest.RedisCluster) rueidis.Client {
	t.Helper()
	c, err := newClusterClient(rc.Seeds())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// newClusterClient is a rueidis client of seeds: a cluster client, since
// their servers are in cluster mode.
func newClusterClient(seeds []string) (rueidis.Client, error) {
	return rueidis.NewClient(rueidis.ClientOption{InitAddress: seeds, DisableCache: true})
}

// rueidisCluster is ClusterNodes over a new rueidis cluster client.
var rueidisCluster = conformance.ClusterClient{
	Name: "rueidis",
	Nodes: func(ctx context.Context, seeds []string) ([]redlock.Node, func(), error) {
		c, err := newClusterClient(seeds)
		if err != nil {
			return nil, nil, err
		}
		nodes, err := redlockrueidis.ClusterNodes(ctx, c)
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		return nodes, c.Close, nil
	},
}

// TestClusterNodes: over a 3-master cluster the nodes are its masters,
// each lock has one key on each (conformance.ClusterPlacement); the nodes
// refuse WithReplicaAck; the slot map names each master with a slot it
// owns and KeySlot agrees with CLUSTER KEYSLOT; and the master nodes that
// ClusterNodes builds on do not follow redirects, and batch and subscribe
// on their server.
func TestClusterNodes(t *testing.T) {
	rc := redistest.StartRedisCluster(t, 3, 0)
	conformance.ClusterPlacement(t, rc, rueidisCluster)
	c := clusterClient(t, rc)
	nodes, err := redlockrueidis.ClusterNodes(ctxT(t, 10*time.Second), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("no replica acknowledgement", func(t *testing.T) {
		if _, err := redlock.NewFactoryFromNodes(nodes, redlock.WithReplicaAck(1)); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("WithReplicaAck(1) over the nodes: %v, want ErrInvalidArgument, as the package doc says", err)
		}
	})
	t.Run("slot map", func(t *testing.T) {
		ctx := ctxT(t, 10*time.Second)
		v, err := redlockrueidis.ClusterClientOf(c).Slots(ctx)
		if err != nil {
			t.Fatal(err)
		}
		masters := redlockrueidis.MastersOf(v)
		if len(masters) != len(rc.Masters) {
			t.Fatalf("the masters of CLUSTER SLOTS are %v, want %d", masters, len(rc.Masters))
		}
		for _, m := range rc.Masters {
			slot, ok := masters[m.Addr()]
			if !ok {
				t.Fatalf("the masters of CLUSTER SLOTS, %v, lack %s", masters, m.Addr())
			}
			if owner := rc.MasterOf(slot); owner != m {
				t.Errorf("slot %d of %s is owned by %v", slot, m.Addr(), owner)
			}
		}
		for i := range 200 {
			k := fmt.Sprint(i)
			if got, want := redlockrueidis.KeySlot(k), conformance.SlotOf(t, rc.Masters[0], k); got != want {
				t.Fatalf("the slot of %q is %d, CLUSTER KEYSLOT says %d", k, got, want)
			}
		}
	})

	t.Run("master nodes", func(t *testing.T) {
		conformance.ClusterMasterNodes(t, rc, redlockrueidis.ClusterClientOf(c))
	})
}

// TestClusterReshardKeepsExclusion: conformance.ClusterReshard over
// rueidis cluster clients.
func TestClusterReshardKeepsExclusion(t *testing.T) {
	conformance.ClusterReshard(t, rueidisCluster)
}

// TestNodesRefusesClusterClient: Nodes makes of a cluster client a node
// whose every command fails with ErrClusterClient, whose text points to
// ClusterNodes; a factory over such nodes fails its attempts with it.
func TestNodesRefusesClusterClient(t *testing.T) {
	rc := redistest.StartRedisCluster(t, 3, 0)
	var clients []rueidis.Client
	for range 3 {
		clients = append(clients, clusterClient(t, rc))
	}
	if m := clients[0].Mode(); m != rueidis.ClientModeCluster {
		t.Fatalf("a client of the cluster has mode %s", m)
	}
	conformance.ClusterClientRefused(t, redlockrueidis.Nodes(clients...), redlockrueidis.ErrClusterClient, "redlockrueidis.ClusterNodes")
}

// TestClusterNodesBadInput: a nil client, and one that is not a cluster
// client.
func TestClusterNodesBadInput(t *testing.T) {
	ctx := ctxT(t, 10*time.Second)
	if _, err := redlockrueidis.ClusterNodes(ctx, nil); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("a nil client: %v, want ErrInvalidArgument", err)
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: exampleAddrs[:1], DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := redlockrueidis.ClusterNodes(ctx, c); !errors.Is(err, redlock.ErrInvalidArgument) || !strings.Contains(err.Error(), "not a cluster client") {
		t.Errorf("a client of a standalone server: %v, want ErrInvalidArgument saying it is not a cluster client", err)
	}
}
