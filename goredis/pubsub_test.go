package redlockgoredis_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockplus/redlock"
	redlockgoredis "github.com/redlockplus/redlock/goredis"
)

// A client's node opens pub/sub connections; a Ring's does not (it would
// subscribe on another shard than the one a release publishes on), so that
// its waiters poll instead of waiting for a notification that never comes.
func TestPubSubNodeKinds(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: exampleAddrs[0]})
	defer c.Close()
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": exampleAddrs[0], "b": exampleAddrs[1]}})
	defer ring.Close()
	nodes := redlockgoredis.Nodes(c, ring)
	if _, ok := nodes[0].(redlock.PubSubNode); !ok {
		t.Error("the node of a *redis.Client is not a redlock.PubSubNode")
	}
	if _, ok := nodes[1].(redlock.PubSubNode); ok {
		t.Error("the node of a *redis.Ring is a redlock.PubSubNode")
	}
	if _, ok := nodes[0].(redlock.Batcher); !ok {
		t.Error("the node of a *redis.Client lost its batches")
	}
}
