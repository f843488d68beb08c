package redlockgoredis

import (
	"github.com/redis/go-redis/v9"

	"github.com/redlockplus/redlock"
)

// ClusterClientOf is the redlock.ClusterClient that ClusterNodes builds on,
// for the tests of its masters' nodes.
func ClusterClientOf(c *redis.ClusterClient) redlock.ClusterClient { return &cluster{c: c} }
