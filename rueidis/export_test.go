package redlockrueidis

import (
	"github.com/redis/rueidis"

	"github.com/redlockplus/redlock"
)

// ClusterClientOf is the redlock.ClusterClient that ClusterNodes builds on,
// for the tests of its masters' nodes.
func ClusterClientOf(c rueidis.Client) redlock.ClusterClient { return &cluster{c: c} }

// MastersOf is mastersOf, for its test on a real reply.
var MastersOf = mastersOf

// KeySlot is the slot of key, as the package computes it.
func KeySlot(key string) int { return redlock.ClusterKeySlot(key) }
