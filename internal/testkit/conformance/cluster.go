package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// ClusterClient makes the nodes of one client library's ClusterNodes: the
// root module's over redigo, or an adapter's over its cluster client.
type ClusterClient struct {
	// Name names the client in messages.
	Name string
	// Nodes returns the nodes of ClusterNodes over a new client of the
	// cluster's seeds, and a func that closes that client.
	Nodes func(ctx context.Context, seeds []string) (nodes []redlock.Node, closeClient func(), err error)
}

// RedigoCluster is the root module's redlock.ClusterNodes; its nodes
// close the cluster's pools.
var RedigoCluster = ClusterClient{
	Name: "redigo",
	Nodes: func(ctx context.Context, seeds []string) ([]redlock.Node, func(), error) {
		nodes, err := redlock.ClusterNodes(ctx, seeds)
		if err != nil {
			return nil, nil, err
		}
		return nodes, func() { nodes[0].(io.Closer).Close() }, nil
	},
}

// factory returns the nodes of a new client of rc and a factory over them
// with opts, both closed when the test ends (the factory first).
func (c ClusterClient) factory(t *testing.T, rc *redistest.RedisCluster, opts ...redlock.Option) ([]redlock.Node, *redlock.Factory) {
	t.Helper()
	nodes, f, closeAll, err := c.open(ctxFor(t, 10*time.Second), rc, opts...)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	t.Cleanup(closeAll)
	return nodes, f
}

// open is factory for a caller that closes what it opened itself.
func (c ClusterClient) open(ctx context.Context, rc *redistest.RedisCluster, opts ...redlock.Option) ([]redlock.Node, *redlock.Factory, func(), error) {
	nodes, closeClient, err := c.Nodes(ctx, rc.Seeds())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("ClusterNodes: %w", err)
	}
	f, err := redlock.NewFactoryFromNodes(nodes, opts...)
	if err != nil {
		closeClient()
		return nil, nil, nil, fmt.Errorf("NewFactoryFromNodes: %w", err)
	}
	return nodes, f, func() { f.Close(); closeClient() }, nil
}

// ClusterPlacement checks, over the nodes of c on rc (3 masters): the
// nodes are the masters; a held lock has exactly one key on each, in a
// slot that master owns, holding the lock's token, and none after
// Release; a MultiLock of 5 names holds 5 keys on every master and
// excludes a lock of one of its names.
func ClusterPlacement(t *testing.T, rc *redistest.RedisCluster, c ClusterClient) {
	// A node timeout well above this machine's stalls, so that every
	// master's vote counts: one that misses it leaves no key.
	nodes, f := c.factory(t, rc, redlock.WithRetryTimes(0), redlock.WithNodeTimeout(2*time.Second), nodeFailures(t))
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
	t.Run("one key per master", func(t *testing.T) { oneKeyPerMaster(t, rc, f) })
	t.Run("MultiLock", func(t *testing.T) { clusterMultiLock(t, rc, f) })
}

func oneKeyPerMaster(t *testing.T, rc *redistest.RedisCluster, f *redlock.Factory) {
	ctx := ctxFor(t, 10*time.Second)
	l := f.NewLock("placement")
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	for i, m := range rc.Masters {
		keys := SettledKeysOn(t, m, "placement", 1)
		if len(keys) != 1 {
			t.Fatalf("master %d (%s) holds %q, want one key", i, m.Addr(), keys)
		}
		if !strings.HasPrefix(keys[0], "{") || !strings.HasSuffix(keys[0], "}placement") {
			t.Errorf("master %d's key %q is not {tag}placement", i, keys[0])
		}
		if owner := rc.MasterOf(SlotOf(t, m, keys[0])); owner != m {
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
		if keys := SettledKeysOn(t, m, "placement", 0); len(keys) != 0 {
			t.Errorf("master %d still holds %q after Release", i, keys)
		}
	}
}

func clusterMultiLock(t *testing.T, rc *redistest.RedisCluster, f *redlock.Factory) {
	ctx := ctxFor(t, 10*time.Second)
	names := []string{"m1", "m2", "m3", "m4", "m5"}
	m := f.NewMultiLock(names)
	if _, err := m.Acquire(ctx); err != nil {
		t.Fatalf("MultiLock: %v", err)
	}
	// The keys first: the last master's script may still be on its way,
	// and a lock of one of its names sent meanwhile could get there first.
	for i, master := range rc.Masters {
		if n := len(SettledKeysOn(t, master, "}m", len(names))); n != len(names) {
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
		if keys := SettledKeysOn(t, master, "}m", 0); len(keys) != 0 {
			t.Errorf("master %d still holds %q after Release", i, keys)
		}
	}
}

// ClusterReshard moves the slot of one master's key of a held,
// autoextended lock to another master (redis-cli --cluster reshard's
// steps). The holder's node reads MOVED, reads the slot map again and
// takes a new tag on its master, and the node guard keeps that node out
// of the vote for a TTL, so the holder extends on the other two; fresh
// clients of c meet the holder's keys on two masters. So: no fresh client
// acquires the lock during and after the move, the holder keeps it, and
// its node stays on the master, which still owns other slots.
func ClusterReshard(t *testing.T, c ClusterClient) {
	rc := redistest.StartRedisCluster(t, 3, 0)
	const ttl = 2 * time.Second
	opts := []redlock.Option{redlock.WithTTL(ttl), redlock.WithNodeTimeout(500 * time.Millisecond)}
	holderNodes, holder := c.factory(t, rc, opts...)
	ctx := ctxFor(t, 60*time.Second)
	l := holder.NewLock("resharded")
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	from := rc.Masters[0]
	keys := SettledKeysOn(t, from, "resharded", 1)
	if len(keys) != 1 {
		t.Fatalf("master 0 holds %q", keys)
	}
	rc.MoveSlot(t, SlotOf(t, from, keys[0]), rc.Masters[1])

	// The holder's next extension reads MOVED on node 0 and its map again:
	// the guard keeps node 0 out for a TTL.
	waitUntil(t, 2*ttl, "the holder's node 0 to leave the vote", func() bool {
		h, err := holder.Health(ctx)
		return err == nil && !h[0].Voting && strings.Contains(h[0].Why, "cluster master or slot changed")
	})
	stop := time.Now().Add(3 * ttl)
	var overlaps, attempts int
	for time.Now().Before(stop) {
		_, other, closeOther, err := c.open(ctx, rc, append(opts, redlock.WithRetryTimes(0))...)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		_, err = other.NewLock("resharded").TryAcquire(ctx)
		closeOther()
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

// ClusterMasterNodes checks the master nodes of an adapter's
// redlock.ClusterClient on rc: a command of a key of another master gets
// the server's MOVED as a redlock.ReplyError, alone and in a batch (the
// node follows no redirect); the node batches and subscribes on its own
// server; and the node of a server the client does not know fails without
// a reply, so that the nodes read the slot map again.
func ClusterMasterNodes(t *testing.T, rc *redistest.RedisCluster, cc redlock.ClusterClient) {
	ctx := ctxFor(t, 10*time.Second)
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
	foreign := KeyIn(t, rc, m1)
	m1.Do("SET", foreign, "v")
	defer m1.Do("DEL", foreign)
	v, err := n.Do(ctx, "GET", foreign)
	if !isMoved(err) {
		t.Fatalf("GET of a key of %s on %s = %v, %v; want a MOVED reply error", m1.Addr(), m0.Addr(), v, err)
	}
	own := KeyIn(t, rc, m0)
	defer m0.Do("DEL", own)
	b, ok := n.(redlock.Batcher)
	if !ok {
		t.Fatal("a master's node is not a redlock.Batcher")
	}
	batch := []redlock.Command{{Name: "SET", Args: []any{own, "x"}}, {Name: "GET", Args: []any{own}}, {Name: "GET", Args: []any{foreign}}}
	b.DoBatch(ctx, batch)
	if batch[0].Err != nil || !isString(batch[1].Reply, "x") {
		t.Errorf("batch on the master: %v %v, %v %v", batch[0].Reply, batch[0].Err, batch[1].Reply, batch[1].Err)
	}
	if !isMoved(batch[2].Err) {
		t.Errorf("a batch's GET of a key of another master: %v, %v; want MOVED", batch[2].Reply, batch[2].Err)
	}
	subscribesOnServer(ctx, t, n, m0)

	unknown, err := cc.Master("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	var re redlock.ReplyError
	if _, err := unknown.Do(ctx, "PING"); err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), "reading the slot map again") {
		t.Errorf("a command on a master the client does not know: %v, want a failure that is not a reply", err)
	}
}

// subscribesOnServer checks that n is a redlock.PubSubNode whose
// subscriptions are on server: a PUBLISH there reaches it.
func subscribesOnServer(ctx context.Context, t *testing.T, n redlock.Node, server *redistest.Node) {
	t.Helper()
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
	if got := server.Do("PUBLISH", "chan", "hello").(int64); got != 1 {
		t.Fatalf("PUBLISH on %s reached %d subscribers, want 1: the subscriber is not on that server", server.Addr(), got)
	}
	if r, err := conn.Receive(ctx); err != nil || r.Kind != "message" || string(r.Data) != "hello" {
		t.Fatalf("Receive = %+v, %v; want the message", r, err)
	}
}

// isMoved reports whether err is the server's MOVED reply.
func isMoved(err error) bool {
	var re redlock.ReplyError
	return errors.As(err, &re) && strings.HasPrefix(string(re), "MOVED ")
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

// SettledKeysOn lists the keys on n that contain part once there are want
// of them, or after 5 s: an operation returns once a quorum of nodes
// answered, and the last node's command may still be on its way.
func SettledKeysOn(t *testing.T, n *redistest.Node, part string, want int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		keys := KeysOn(t, n, part)
		if len(keys) == want || time.Now().After(deadline) {
			return keys
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// KeysOn lists the keys on n that contain part.
func KeysOn(t *testing.T, n *redistest.Node, part string) []string {
	t.Helper()
	var keys []string
	for _, k := range n.Do("KEYS", "*"+part+"*").([]any) {
		keys = append(keys, string(k.([]byte)))
	}
	return keys
}

// SlotOf is the slot of key, by the cluster's CLUSTER KEYSLOT on n.
func SlotOf(t *testing.T, n *redistest.Node, key string) int {
	t.Helper()
	return int(n.Do("CLUSTER", "KEYSLOT", key).(int64))
}

// KeyIn returns a key whose slot rc's master m owns.
func KeyIn(t *testing.T, rc *redistest.RedisCluster, m *redistest.Node) string {
	t.Helper()
	for i := range 100_000 {
		if k := fmt.Sprintf("probe:%d", i); rc.MasterOf(SlotOf(t, m, k)) == m {
			return k
		}
	}
	t.Fatalf("%s owns no slot", m.Addr())
	return ""
}

// nodeFailures is an observer that logs the nodes' failed replies when
// the test fails, to tell a failed vote from a misplaced key.
func nodeFailures(t *testing.T) redlock.Option {
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

// ctxFor is a context that ends after d or with the test.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitUntil polls cond every 10 ms for at most d, and fails the test with
// what it waited for if cond never held.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ClusterClientRefused checks the nodes that an adapter's Nodes made of
// cluster clients: every command fails with refusal (errors.Is), whose
// text names pointer (the adapter's ClusterNodes, as "use
// redlockgoredis.ClusterNodes"); they do not subscribe or batch; a
// factory over them fails its attempts with refusal; and Health shows
// every node out of the vote, pointing to ClusterNodes.
func ClusterClientRefused(t *testing.T, nodes []redlock.Node, refusal error, pointer string) {
	ctx := ctxFor(t, 10*time.Second)
	_, err := nodes[0].Do(ctx, "PING")
	if !errors.Is(err, refusal) || !strings.Contains(err.Error(), "use "+pointer) {
		t.Fatalf("a command of a cluster client's node: %v, want %v pointing to %s", err, refusal, pointer)
	}
	if _, ok := nodes[0].(redlock.PubSubNode); ok {
		t.Error("a cluster client's node is a redlock.PubSubNode")
	}
	if _, ok := nodes[0].(redlock.Batcher); ok {
		t.Error("a cluster client's node is a redlock.Batcher")
	}
	f, err := redlock.NewFactoryFromNodes(nodes, redlock.WithRetryTimes(0))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.NewLock("refused").TryAcquire(ctx)
	if !errors.Is(err, refusal) || !strings.Contains(err.Error(), "ClusterNodes") {
		t.Fatalf("an attempt over cluster clients: %v, want %v pointing to ClusterNodes", err, refusal)
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
