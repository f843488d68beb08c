package redlockrueidis_test

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/redlockplus/redlock"
	redlockrueidis "github.com/redlockplus/redlock/rueidis"
)

// Locks over the rueidis clients a service already has.
func ExampleNodes() {
	var clients []rueidis.Client
	for _, addr := range exampleAddrs { // such as "10.0.0.1:6379"
		// ForceSingleClient: a client even while its node is down (it
		// connects once the node answers), so that the lock works with a
		// minority of nodes down from the start.
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true})
		if c == nil {
			fmt.Println(err)
			return
		}
		defer c.Close()
		clients = append(clients, c)
	}
	f, err := redlock.NewFactoryFromNodes(redlockrueidis.Nodes(clients...))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close() // the clients stay open: they are the service's
	err = f.Do(context.Background(), "report", func(ctx context.Context) error {
		return nil // the work, under the lock
	})
	fmt.Println("done:", err)
	// Output: done: <nil>
}

// Locks over the masters of a Redis Cluster, through the rueidis cluster
// client a service already has. (It needs a cluster, so it is not run.)
func ExampleClusterNodes() {
	// Without ForceSingleClient, rueidis makes a cluster client for servers
	// in cluster mode.
	cc, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:  []string{"10.0.0.1:7000", "10.0.0.2:7000"}, // any members
		DisableCache: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cc.Close() // after the factory: the nodes use its connections
	ctx := context.Background()
	nodes, err := redlockrueidis.ClusterNodes(ctx, cc) // one per master
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := redlock.NewFactoryFromNodes(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	err = f.Do(ctx, "report", func(ctx context.Context) error {
		return nil // the work, under the lock
	})
	fmt.Println("done:", err)
}
