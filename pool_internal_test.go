package redlock

import (
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pipeline"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// poolsOf starts n nodes and returns their pools as a factory takes them.
func poolsOf(t *testing.T, n int) (*redistest.Cluster, []Pool) {
	c := redistest.Start(t, n)
	pools := make([]Pool, n)
	for i, p := range c.Pools() {
		pools[i] = p
	}
	return c, pools
}

// TestNewPoolGivesThePipelineASocket: a redis:// pool of NewPool lets the
// pipelined transport dial a socket of its own; a TLS pool and a pool of
// the caller's lend their connections.
func TestNewPoolGivesThePipelineASocket(t *testing.T) {
	plain, err := NewPool("redis://127.0.0.1:6379")
	if err != nil {
		t.Fatal(err)
	}
	if pipeline.FactsOf(plain).Dial == nil {
		t.Fatal("NewPool(redis://) remembered no socket dialler")
	}
	tls, err := NewPool("rediss://127.0.0.1:6379")
	if err != nil {
		t.Fatal(err)
	}
	if pipeline.FactsOf(tls).Dial != nil {
		t.Fatal("NewPool(rediss://) remembered a socket dialler")
	}
	own := &redis.Pool{}
	if pipeline.FactsOf(own).Dial != nil {
		t.Fatal("a pool of the caller's has a socket dialler")
	}
}
