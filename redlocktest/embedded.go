package redlocktest

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"

	"github.com/redlockplus/redlock"
)

// Embedded starts n Redis servers embedded in the test process
// (github.com/alicebob/miniredis) and returns a pool for each, in node
// order, for redlock.NewFactory. It needs neither Docker nor redis-server,
// and suits unit tests that need a lock but no faults. The servers and
// pools are closed when the test ends. It fails the test for n < 1.
//
// The embedded servers run every command redlock sends (the Lua scripts,
// pipelining, and the pub/sub of wakeups) and expire keys on the wall
// clock, but they are not Redis: their timing says nothing about a real
// deployment, and they cannot be killed, paused or cut off. For fault
// tests use Start.
//
// They report themselves durable (CONFIG GET append* answers appendonly
// yes, appendfsync always), which is true of a server that never restarts
// while it lives: the node guard (redlock.WithRestartGuard) lets them vote
// at once.
func Embedded(t testing.TB, n int) []redlock.Pool {
	t.Helper()
	if n < 1 {
		t.Fatalf("redlocktest: Embedded(%d): at least 1 node is needed", n)
	}
	out := make([]redlock.Pool, n)
	for i := range out {
		m := miniredis.NewMiniRedis()
		m.ClockTTL(true) // keys expire on the wall clock, as on Redis
		if err := m.Start(); err != nil {
			t.Fatalf("redlocktest: embedded node %d: %v", i, err)
		}
		if err := m.Server().Register("CONFIG", durableConfig); err != nil {
			t.Fatalf("redlocktest: embedded node %d: %v", i, err)
		}
		t.Cleanup(m.Close)
		p, err := redlock.NewPool("redis://" + m.Addr())
		if err != nil {
			t.Fatalf("redlocktest: pool for embedded node %s: %v", m.Addr(), err)
		}
		t.Cleanup(func() { _ = p.Close() })
		out[i] = p
	}
	return out
}

// durableConfig answers CONFIG GET, the one CONFIG command the lock sends,
// with the settings of a durable node.
func durableConfig(c *server.Peer, _ string, _ []string) {
	c.WriteLen(4)
	for _, s := range []string{"appendonly", "yes", "appendfsync", "always"} {
		c.WriteBulk(s)
	}
}
