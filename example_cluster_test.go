package redlock_test

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/redlockplus/redlock"
)

// The masters of one Redis Cluster as the quorum, with every vote
// acknowledged by a replica so that a lock survives a failover. It needs a
// cluster at 127.0.0.1:7000 with a replica per master, so it only compiles.
func ExampleClusterNodes() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nodes, err := redlock.ClusterNodes(ctx, []string{"redis://127.0.0.1:7000"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nodes[0].(io.Closer).Close() // the cluster's connections, after the factory
	f, err := redlock.NewFactoryFromNodes(nodes, redlock.WithReplicaAck(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	l := f.NewLock("orders:42")
	if _, err := l.Acquire(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer l.Release(ctx)
	in, _ := f.Inspect(ctx, "orders:42")
	for _, n := range in.Nodes {
		fmt.Println(n.Addr, n.Slot, n.Key) // 127.0.0.1:7000 ... {n}orders:42 on each master
	}
}
