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
