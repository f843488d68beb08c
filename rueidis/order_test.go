package redlockrueidis_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
	redlockrueidis "github.com/redlockplus/redlock/rueidis"
)

// TestOneOrderAfterTimeouts: a node's commands reach it in the order they
// were sent, also when they timed out and the node runs them later. A
// paused node runs the SET and then the delete of an attempt that gave up
// on it, and keeps no key; on connections of their own the delete could
// run first, and the SET's key would hold the lock for its TTL (failover
// scenario 3 over rueidis: such keys, left by a pause, kept a quorum from
// forming in the partition window after it).
func TestOneOrderAfterTimeouts(t *testing.T) {
	rc := redistest.Start(t, 1)
	acquire, release := script(t, "acquire"), script(t, "release")
	for _, s := range []*redlock.Script{acquire, release} {
		rc.Nodes[0].Do("SCRIPT", "LOAD", s.Source())
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: rc.Addrs(), ForceSingleClient: true,
		DisableCache: true, DisableRetry: true, ConnWriteTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := redlockrueidis.Nodes(c)[0].(redlock.Batcher)
	batch := func(cmd redlock.Command) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		cmds := []redlock.Command{cmd}
		b.DoBatch(ctx, cmds)
		return cmds[0].Err
	}
	// Every connection of the client is up before the pause.
	for k := range 20 {
		if err := batch(redlock.Command{Script: release, Keys: []string{"warm" + strconv.Itoa(k)}, Args: []any{"t"}}); err != nil {
			t.Fatal(err)
		}
	}
	const n = 20
	rc.Nodes[0].Pause()
	for k := range n {
		key := "lock" + strconv.Itoa(k)
		if err := batch(redlock.Command{Script: acquire, Keys: []string{key}, Args: []any{"token", 60000}}); err == nil {
			t.Fatalf("SET %s answered while the node was paused", key)
		}
		if err := batch(redlock.Command{Script: release, Keys: []string{key}, Args: []any{"token"}}); err == nil {
			t.Fatalf("delete of %s answered while the node was paused", key)
		}
	}
	rc.Nodes[0].Resume()
	// A command sent now runs after everything sent before it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := redlockrueidis.Nodes(c)[0].Do(ctx, "PING"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // and another connection's, if any, meanwhile
	left := rc.Nodes[0].Do("KEYS", "lock*").([]any)
	if len(left) != 0 {
		t.Errorf("%d of %d keys left, their deletes ran before their SETs: %s", len(left), n, left)
	}
}
