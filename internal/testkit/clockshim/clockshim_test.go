package clockshim_test

import (
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/testkit/clockshim"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// TestStepExpiresKeys: a node on the shim reports the stepped time in TIME
// and expires a key whose TTL the step passes, while it runs.
func TestStepExpiresKeys(t *testing.T) {
	clock := clockshim.New(t)
	c := redistest.Start(t, 1)
	n := c.Nodes[0]
	n.Kill()
	n.Env = clock.Env()
	n.Start()
	wall := func() time.Time {
		v, err := redis.Int64s(n.Do("TIME"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return time.Unix(v[0], v[1]*1000)
	}
	if off := time.Until(wall()); off > time.Second || off < -time.Second {
		t.Fatalf("offset 0: node clock is %v off", off)
	}
	n.Do("SET", "k", "v", "PX", 60000)
	clock.Set(t, 120*time.Second)
	if off := time.Until(wall()); off < 119*time.Second || off > 121*time.Second {
		t.Fatalf("offset +120s: node clock is %v off", off)
	}
	if v := n.Do("GET", "k"); v != nil {
		t.Fatalf("a 60 s key survived a +120 s step: %v", v)
	}
}
