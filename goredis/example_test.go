package redlockgoredis_test

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redlockplus/redlock"
	redlockgoredis "github.com/redlockplus/redlock/goredis"
)

// Locks over the go-redis clients a service already has.
func ExampleNodes() {
	var clients []redis.UniversalClient
	for _, addr := range exampleAddrs { // such as "10.0.0.1:6379"
		c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		defer c.Close()
		clients = append(clients, c)
	}
	f, err := redlock.NewFactoryFromNodes(redlockgoredis.Nodes(clients...))
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

// Locks over the masters of a Redis Cluster, through the go-redis cluster
// client a service already has. (It needs a cluster, so it is not run.)
func ExampleClusterNodes() {
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 []string{"10.0.0.1:7000", "10.0.0.2:7000"}, // any members
		ContextTimeoutEnabled: true,
	})
	defer cc.Close() // after the factory: the nodes use its clients
	ctx := context.Background()
	nodes, err := redlockgoredis.ClusterNodes(ctx, cc) // one per master
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
