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
