package redlockrueidis_test

import (
	"context"
	"crypto/tls"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/delayproxy"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
	redlockrueidis "github.com/redlockplus/redlock/rueidis"
)

// TestSlowNodeAfterTimeout: a node 60 ms away keeps answering within a
// node timeout of 100 ms after some of its commands timed out. A
// connection that a timeout closed would cost its next command a dial and
// a handshake first, a round trip more than the node timeout leaves
// (failover scenario 7 over rueidis: the node that had been slower than
// the node timeout redialled on every command, and never voted again once
// its round trip was 60 ms).
func TestSlowNodeAfterTimeout(t *testing.T) {
	const rtt, nodeTimeout = 60 * time.Millisecond, 100 * time.Millisecond
	rc := redistest.Start(t, 1)
	p, err := delayproxy.Start(rc.Addrs()[0], rtt)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	check := script(t, "check")
	rc.Nodes[0].Do("SCRIPT", "LOAD", check.Source())
	var dials atomic.Int64
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p.Addr()}, ForceSingleClient: true,
		DisableCache: true, DisableRetry: true, ConnWriteTimeout: 5 * nodeTimeout,
		DialCtxFn: func(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
			dials.Add(1)
			return d.DialContext(ctx, "tcp", addr)
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nd := redlockrueidis.Nodes(c)[0]
	b := nd.(redlock.Batcher)
	// Scripts go to one of the client's connections at random (by their
	// key's slot): 20 of them reach every connection.
	run := func(k int, d time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		key := "k" + strconv.Itoa(k)
		switch k % 3 {
		case 0:
			batch := []redlock.Command{{Script: check, Keys: []string{key}, Args: []any{"token"}}}
			b.DoBatch(ctx, batch)
			return batch[0].Err
		case 1:
			_, err := nd.RunScript(ctx, check, []string{key}, "token")
			return err
		default:
			_, err := nd.Do(ctx, "PTTL", key)
			return err
		}
	}
	for k := range 20 {
		if err := run(k, time.Second); err != nil {
			t.Fatalf("command %d without a timeout: %v", k, err)
		}
	}
	for k := range 6 {
		if err := run(k, rtt/2); err == nil {
			t.Fatalf("command %d with a timeout of %v answered", k, rtt/2)
		}
	}
	before := dials.Load()
	for k := range 20 {
		if err := run(k, nodeTimeout); err != nil {
			t.Errorf("command %d after the timeouts: %v", k, err)
		}
	}
	if n := dials.Load() - before; n != 0 {
		t.Errorf("%d dials after the timeouts, want none", n)
	}
}

// script returns the lock's script of that name.
func script(t *testing.T, name string) *redlock.Script {
	t.Helper()
	for _, s := range redlock.Scripts() {
		if s.Name() == name {
			return s
		}
	}
	t.Fatalf("no script %q", name)
	return nil
}
