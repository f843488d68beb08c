package redlock_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redlockplus/redlock"
)

// A factory over Nodes: here redigo pools as PoolNodes, which is what
// NewFactory does; the modules goredis and rueidis make Nodes of go-redis
// and rueidis clients the same way.
func ExampleNewFactoryFromNodes() {
	var nodes []redlock.Node
	for _, u := range nodeURLs {
		p, err := redlock.NewPool(u)
		if err != nil {
			log.Fatal(err)
		}
		defer p.Close()
		nodes = append(nodes, redlock.PoolNode(p))
	}
	f, err := redlock.NewFactoryFromNodes(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	err = f.Do(context.Background(), "reports:nightly", func(ctx context.Context) error {
		return nil // the work, under the lock
	})
	fmt.Println("done:", err)
	// Output: done: <nil>
}
