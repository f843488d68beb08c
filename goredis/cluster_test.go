package redlockgoredis_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockplus/redlock"
	redlockgoredis "github.com/redlockplus/redlock/goredis"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// ctxT is a context that ends after d or with the test.
func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// clusterClient is a go-redis cluster client of rc, with the settings the
// package doc advises, closed when the test ends.
func clusterClient(t *testing.T, rc *redistest.RedisCluster) *redis.ClusterClient {
	t.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 rc.Seeds(),
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialerRetries:         1,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// clusterFactory returns the nodes of ClusterNodes over c and a factory
// over them with opts, closed when the test ends.
func clusterFactory(t *testing.T, c *redis.ClusterClient, opts ...redlock.Option) ([]redlock.Node, *redlock.Factory) {
	t.Helper()
	nodes, err := redlockgoredis.ClusterNodes(ctxT(t, 10*time.Second), c)
	if err != nil {
		t.Fatal(err)
	}
	f, err := redlock.NewFactoryFromNodes(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return nodes, f
}

// failures is an observer that logs the nodes' failed replies when the
// test fails, to tell a failed vote from a misplaced key.
func failures(t *testing.T) redlock.Option {
	var mu sync.Mutex
	var seen []string
	t.Cleanup(func() {
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("the nodes' failed replies:\n%s", strings.Join(seen, "\n"))
		}
	})
	return redlock.WithObserver(redlock.Observer{NodeReply: func(_ context.Context, e redlock.NodeReplyEvent) {
		if e.Err != nil {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, fmt.Sprintf("%s %s on node %d (%s): %v", e.Op, e.Lock, e.Node, e.Addr, e.Err))
		}
	}})
}

// settledKeysOn lists the keys on n that contain part once there are want
// of them, or after 5 s: an operation returns once a quorum of nodes
// answered, and the last node's command may still be on its way.
func settledKeysOn(t *testing.T, n *redistest.Node, part string, want int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		keys := keysOn(t, n, part)
		if len(keys) == want || time.Now().After(deadline) {
			return keys
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// keysOn lists the keys on n that contain part.
func keysOn(t *testing.T, n *redistest.Node, part string) []string {
	t.Helper()
	var keys []string
	for _, k := range n.Do("KEYS", "*"+part+"*").([]any) {
		keys = append(keys, string(k.([]byte)))
	}
	return keys
}

// slotOf is the slot of key, by the cluster's CLUSTER KEYSLOT.
func slotOf(t *testing.T, n *redistest.Node, key string) int {
	t.Helper()
	return int(n.Do("CLUSTER", "KEYSLOT", key).(int64))
}

// keyIn returns a key whose slot rc's master m owns.
func keyIn(t *testing.T, rc *redistest.RedisCluster, m *redistest.Node) string {
	t.Helper()
	for i := range 100_000 {
		if k := fmt.Sprintf("probe:%d", i); rc.MasterOf(slotOf(t, m, k)) == m {
			return k
		}
	}
	t.Fatalf("%s owns no slot", m.Addr())
	return ""
}

// isString reports whether v is the string reply want, as a string or a
// []byte.
func isString(v any, want string) bool {
	switch v := v.(type) {
	case string:
		return v == want
	case []byte:
		return string(v) == want
	}
	return false
}

// TestClusterNodes: over a 3-master cluster the nodes are its masters; a
// held lock has exactly one key on each, in a slot that master owns; a
// MultiLock of 5 names works; and the master nodes that ClusterNodes
// builds on do not follow redirects, and batch and subscribe on their
// server.
func TestClusterNodes(t *testing.T) {
	rc := redistest.StartRedisCluster(t, 3, 0)
	c := clusterClient(t, rc)
	// A node timeout well above this machine's stalls, so that every
	// master's vote counts: one that misses it leaves no key.
	nodes, f := clusterFactory(t, c, redlock.WithRetryTimes(0), redlock.WithNodeTimeout(2*time.Second), failures(t))

	t.Run("the masters", func(t *testing.T) {
		var addrs []string
		for _, n := range nodes {
			addrs = append(addrs, n.Addr())
		}
		slices.Sort(addrs)
		want := rc.Seeds()
		slices.Sort(want)
		if !slices.Equal(addrs, want) {
			t.Fatalf("the nodes are %q, want the masters %q", addrs, want)
		}
	})

	t.Run("no replica acknowledgement", func(t *testing.T) {
		if _, err := redlock.NewFactoryFromNodes(nodes, redlock.WithReplicaAck(1)); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("WithReplicaAck(1) over the nodes: %v, want ErrInvalidArgument, as the package doc says", err)
		}
	})

	t.Run("one key per master", func(t *testing.T) {
		ctx := ctxT(t, 10*time.Second)
		l := f.NewLock("placement")
		if _, err := l.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		for i, m := range rc.Masters {
			keys := settledKeysOn(t, m, "placement", 1)
			if len(keys) != 1 {
				t.Fatalf("master %d (%s) holds %q, want one key", i, m.Addr(), keys)
			}
			if !strings.HasPrefix(keys[0], "{") || !strings.HasSuffix(keys[0], "}placement") {
				t.Errorf("master %d's key %q is not {tag}placement", i, keys[0])
			}
			if owner := rc.MasterOf(slotOf(t, m, keys[0])); owner != m {
				t.Errorf("key %q on %s is in a slot of %v", keys[0], m.Addr(), owner)
			}
			if got, _ := m.Do("GET", keys[0]).([]byte); string(got) != l.Token() {
				t.Errorf("master %d holds %q, want the token %q", i, got, l.Token())
			}
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		for i, m := range rc.Masters {
			if keys := settledKeysOn(t, m, "placement", 0); len(keys) != 0 {
				t.Errorf("master %d still holds %q after Release", i, keys)
			}
		}
	})

	t.Run("MultiLock", func(t *testing.T) {
		ctx := ctxT(t, 10*time.Second)
		names := []string{"m1", "m2", "m3", "m4", "m5"}
		m := f.NewMultiLock(names)
		if _, err := m.Acquire(ctx); err != nil {
			t.Fatalf("MultiLock: %v", err)
		}
		// The keys first: the last master's script may still be on its
		// way, and a lock of one of its names sent meanwhile could get
		// there first.
		for i, master := range rc.Masters {
			if n := len(settledKeysOn(t, master, "}m", len(names))); n != len(names) {
				t.Errorf("master %d holds %d of the MultiLock's keys, want %d", i, n, len(names))
			}
		}
		if _, err := f.NewLock("m3").TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("a name of the held MultiLock: %v, want ErrNotAcquired", err)
		}
		if err := m.Release(ctx); err != nil {
			t.Fatal(err)
		}
		for i, master := range rc.Masters {
			if keys := settledKeysOn(t, master, "}m", 0); len(keys) != 0 {
				t.Errorf("master %d still holds %q after Release", i, keys)
			}
		}
	})

	t.Run("master nodes", func(t *testing.T) {
		ctx := ctxT(t, 10*time.Second)
		cc := redlockgoredis.ClusterClientOf(c)
		if _, err := cc.Slots(ctx); err != nil {
			t.Fatal(err)
		}
		m0, m1 := rc.Masters[0], rc.Masters[1]
		n, err := cc.Master(m0.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if n.Addr() != m0.Addr() {
			t.Fatalf("Master(%s) is the node of %s", m0.Addr(), n.Addr())
		}
		// A key of another master: the server's MOVED, not its value.
		foreign := keyIn(t, rc, m1)
		m1.Do("SET", foreign, "v")
		v, err := n.Do(ctx, "GET", foreign)
		var re redlock.ReplyError
		if !errors.As(err, &re) || !strings.HasPrefix(string(re), "MOVED ") {
			t.Fatalf("GET of a key of %s on %s = %v, %v; want a MOVED reply error", m1.Addr(), m0.Addr(), v, err)
		}
		own := keyIn(t, rc, m0)
		b, ok := n.(redlock.Batcher)
		if !ok {
			t.Fatal("a master's node is not a redlock.Batcher")
		}
		batch := []redlock.Command{{Name: "SET", Args: []any{own, "x"}}, {Name: "GET", Args: []any{own}}, {Name: "GET", Args: []any{foreign}}}
		b.DoBatch(ctx, batch)
		if batch[0].Err != nil || !isString(batch[1].Reply, "x") {
			t.Errorf("batch on the master: %v %v, %v %v", batch[0].Reply, batch[0].Err, batch[1].Reply, batch[1].Err)
		}
		if !errors.As(batch[2].Err, &re) || !strings.HasPrefix(string(re), "MOVED ") {
			t.Errorf("a batch's GET of a key of another master: %v, %v; want MOVED", batch[2].Reply, batch[2].Err)
		}
		ps, ok := n.(redlock.PubSubNode)
		if !ok {
			t.Fatal("a master's node is not a redlock.PubSubNode")
		}
		conn, err := ps.PubSub(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := conn.Subscribe(ctx, "chan"); err != nil {
			t.Fatal(err)
		}
		if r, err := conn.Receive(ctx); err != nil || r.Kind != "subscribe" {
			t.Fatalf("Receive = %+v, %v; want the subscription", r, err)
		}
		if got := m0.Do("PUBLISH", "chan", "hello").(int64); got != 1 {
			t.Fatalf("PUBLISH on %s reached %d subscribers, want 1: the subscriber is not on the master", m0.Addr(), got)
		}
		if r, err := conn.Receive(ctx); err != nil || r.Kind != "message" || string(r.Data) != "hello" {
			t.Fatalf("Receive = %+v, %v; want the message", r, err)
		}
		m0.Do("DEL", own)
		m1.Do("DEL", foreign)

		// A server the client has no client of: a failure, not a reply,
		// so that the nodes read the slot map again.
		unknown, err := cc.Master("127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := unknown.Do(ctx, "PING"); err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), "reading the slot map again") {
			t.Errorf("a command on a master the client does not know: %v, want a failure that is not a reply", err)
		}
	})
}

// TestClusterReshardKeepsExclusion: moving the slot of one master's lock
// key to another master while a lock is held (autoextended) lets no fresh
// client in, and the holder keeps its lock, as the root package's test of
// the same name checks over redigo pools.
func TestClusterReshardKeepsExclusion(t *testing.T) {
	rc := redistest.StartRedisCluster(t, 3, 0)
	const ttl = 2 * time.Second
	holderNodes, holder := clusterFactory(t, clusterClient(t, rc), redlock.WithTTL(ttl), redlock.WithNodeTimeout(500*time.Millisecond))
	ctx := ctxT(t, 60*time.Second)
	l := holder.NewLock("resharded")
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	from := rc.Masters[0]
	keys := settledKeysOn(t, from, "resharded", 1)
	if len(keys) != 1 {
		t.Fatalf("master 0 holds %q", keys)
	}
	rc.MoveSlot(t, slotOf(t, from, keys[0]), rc.Masters[1])

	stop := time.Now().Add(3 * ttl)
	var overlaps, attempts int
	for time.Now().Before(stop) {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Seeds(), ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
		nodes, err := redlockgoredis.ClusterNodes(ctx, c)
		if err != nil {
			c.Close()
			t.Fatal(err)
		}
		other, err := redlock.NewFactoryFromNodes(nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(500*time.Millisecond), redlock.WithRetryTimes(0))
		if err != nil {
			c.Close()
			t.Fatal(err)
		}
		_, err = other.NewLock("resharded").TryAcquire(ctx)
		other.Close()
		c.Close()
		attempts++
		if err == nil {
			overlaps++
		} else if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("a fresh client's attempt: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d fresh clients tried during and after the reshard", attempts)
	if overlaps != 0 {
		t.Fatalf("%d of %d fresh clients acquired the held lock after the reshard", overlaps, attempts)
	}
	select {
	case <-l.Done():
		t.Fatalf("the holder lost its lock through the reshard: %v", l.Err())
	default:
	}
	if got := holderNodes[0].Addr(); got != from.Addr() {
		t.Errorf("node 0 moved to %s; its master %s still owns slots", got, from.Addr())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestNodesRefusesClusterClient: Nodes makes of a *redis.ClusterClient a
// node whose every command fails with ErrClusterClient, whose text points
// to ClusterNodes; a factory over such nodes fails its attempts with it.
func TestNodesRefusesClusterClient(t *testing.T) {
	ctx := ctxT(t, 10*time.Second)
	var clients []redis.UniversalClient
	for range 3 {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: exampleAddrs})
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	nodes := redlockgoredis.Nodes(clients...)
	_, err := nodes[0].Do(ctx, "PING")
	if !errors.Is(err, redlockgoredis.ErrClusterClient) || !strings.Contains(err.Error(), "use redlockgoredis.ClusterNodes") {
		t.Fatalf("a command of a cluster client's node: %v, want ErrClusterClient pointing to ClusterNodes", err)
	}
	if _, ok := nodes[0].(redlock.PubSubNode); ok {
		t.Error("a cluster client's node is a redlock.PubSubNode")
	}
	f, err := redlock.NewFactoryFromNodes(nodes, redlock.WithRetryTimes(0))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.NewLock("refused").TryAcquire(ctx)
	if !errors.Is(err, redlockgoredis.ErrClusterClient) || !strings.Contains(err.Error(), "ClusterNodes") {
		t.Fatalf("an attempt over cluster clients: %v, want ErrClusterClient pointing to ClusterNodes", err)
	}
	hs, err := f.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hs {
		if h.Voting || !strings.Contains(h.Why, "ClusterNodes") {
			t.Errorf("Health of node %d: voting %v, why %q; want it out, pointing to ClusterNodes", i, h.Voting, h.Why)
		}
	}
}

// TestClusterNodesBadInput: a nil cluster client, and one whose servers
// are not in cluster mode.
func TestClusterNodesBadInput(t *testing.T) {
	ctx := ctxT(t, 10*time.Second)
	if _, err := redlockgoredis.ClusterNodes(ctx, nil); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("a nil client: %v, want ErrInvalidArgument", err)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: exampleAddrs[:1]})
	defer c.Close()
	if _, err := redlockgoredis.ClusterNodes(ctx, c); err == nil || !strings.Contains(err.Error(), "cluster") {
		t.Errorf("a standalone server: %v, want the refusal of CLUSTER SLOTS", err)
	}
}
