package sdlsuite

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
	"github.com/redlockplus/redlock/sdlstore"
)

// Nodes makes one redlock.Node per address (host:port), in order, over the
// client under test; the clients behind them are closed by t.Cleanup.
type Nodes func(t *testing.T, addrs []string) []redlock.Node

// RunNodes runs the suite on stores that sdlstore.NewFromNodes makes over
// nodes of fresh redis-server processes. Over nodes that are
// redlock.PubSubNodes every case runs as in Run, the ones that subscribe
// over the connections the nodes' PubSub opens. Over nodes that are not,
// each case that subscribes checks instead that SubscribeChannel refuses
// with ErrSubscribeUnsupported, and every other case runs as in Run
// (publishing included, seen by raw subscribers). Cases of their own check
// construction, addresses, NOSCRIPT recovery, error mapping, a store whose
// nodes subscribe but one, and, over PubSubNodes, resubscription after a
// restart, subscribing while the instance is down, and Close (which closes
// the connections, and whose goroutines the caller's leak check finds
// gone); over other nodes these last cases check the refusal.
func RunNodes(t *testing.T, nodes Nodes) {
	run(t, func(t *testing.T, n int, opts ...sdlstore.Option) (*sdlstore.Store, []string, bool) {
		cl := redistest.Start(t, n)
		ns := nodes(t, cl.Addrs())
		return nodesStore(t, ns, opts...), cl.Addrs(), subscribing(ns)
	})
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, nodes Nodes)
	}{
		{"NodesConstruction", testNodesConstruction},
		{"NodesAddrs", testNodesAddrs},
		{"NodesNoScript", testNodesNoScript},
		{"NodesErrors", testNodesErrors},
		{"NodesSubscribeMixed", testNodesSubscribeMixed},
		{"NodesNotificationsAfterRestart", testNodesNotificationsAfterRestart},
		{"NodesSubscribeWhileDown", testNodesSubscribeWhileDown},
		{"NodesCloseSubscribers", testNodesCloseSubscribers},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, nodes) })
	}
}

// subscribing reports whether every node is a redlock.PubSubNode, so that
// a store over them subscribes on every instance.
func subscribing(nodes []redlock.Node) bool {
	for _, n := range nodes {
		if _, ok := n.(redlock.PubSubNode); !ok {
			return false
		}
	}
	return true
}

// subscribingStore makes a store over nodes of cl. When they are not
// PubSubNodes it checks that the store refuses to subscribe (see
// testSubscribeUnsupported) and returns false: the caller's case, which
// subscribes, has nothing more to check.
func subscribingStore(t *testing.T, cl *redistest.Cluster, nodes Nodes, opts ...sdlstore.Option) (*sdlstore.Store, bool) {
	t.Helper()
	ns := nodes(t, cl.Addrs())
	s := nodesStore(t, ns, opts...)
	if !subscribing(ns) {
		testSubscribeUnsupported(t, &env{t: t, s: s, addrs: cl.Addrs()})
		return s, false
	}
	return s, true
}

// nodesStore makes a store over nodes, closed when the test ends.
func nodesStore(t *testing.T, nodes []redlock.Node, opts ...sdlstore.Option) *sdlstore.Store {
	t.Helper()
	s, err := sdlstore.NewFromNodes(nodes, opts...)
	if err != nil {
		t.Fatalf("NewFromNodes: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// No nodes, a nil node, a node given twice and a bad option are refused.
func testNodesConstruction(t *testing.T, nodes Nodes) {
	ns := nodes(t, redistest.Start(t, 2).Addrs())
	for name, list := range map[string][]redlock.Node{
		"no nodes":  nil,
		"empty":     {},
		"nil node":  {ns[0], nil},
		"duplicate": {ns[0], ns[1], ns[0]},
	} {
		_, err := sdlstore.NewFromNodes(list)
		t.Run(name, func(t *testing.T) { wantErr(t, err, sdlstore.ErrInvalidArgument) })
	}
	_, err := sdlstore.NewFromNodes(ns, sdlstore.WithEventQueue(0))
	wantErr(t, err, sdlstore.ErrInvalidArgument)
	s := nodesStore(t, ns)
	if s.Instances() != 2 || !s.IsActive(ctx(t)) {
		t.Fatalf("store over 2 nodes: %d instances, active %v", s.Instances(), s.IsActive(ctx(t)))
	}
}

// Health, Statistics and Namespaces name each instance by its node's
// address.
func testNodesAddrs(t *testing.T, nodes Nodes) {
	cl := redistest.Start(t, 2)
	addrs := cl.Addrs()
	c, s := ctx(t), nodesStore(t, nodes(t, addrs))
	for i := range addrs {
		must(t, s.Set(c, namespaceOn(t, s, i), map[string][]byte{"a": {}, "b": {}}))
	}
	h, err := s.Health(c)
	must(t, err)
	if !h.Healthy() || len(h.Instances) != 2 || len(h.Sentinels) != 0 {
		t.Fatalf("Health = %+v", h)
	}
	for i, in := range h.Instances {
		if in.Addr != addrs[i] || in.Role != "master" || !in.Reachable {
			t.Fatalf("Health of instance %d = %+v, want a reachable master at %s", i, in, addrs[i])
		}
	}
	st, err := s.Statistics(c)
	must(t, err)
	for i, x := range st {
		if x.Addr != addrs[i] || x.Error != "" || x.Keys != 2 {
			t.Fatalf("Statistics of instance %d = %+v, want 2 keys at %s", i, x, addrs[i])
		}
	}
	list, err := s.Namespaces(c)
	must(t, err)
	if len(list) != 2 {
		t.Fatalf("Namespaces = %+v, want 2", list)
	}
	for _, ni := range list {
		if ni.Addr != addrs[ni.Instance] || ni.Keys != 2 {
			t.Fatalf("Namespaces entry %+v, want 2 keys at %s", ni, addrs[ni.Instance])
		}
	}
}

// The scripts go by EVALSHA and fall back to EVAL after SCRIPT FLUSH, for
// data and lock alike.
func testNodesNoScript(t *testing.T, nodes Nodes) {
	cl := redistest.Start(t, 1)
	c, s := ctx(t), nodesStore(t, nodes(t, cl.Addrs()))
	flush := func() { cl.Nodes[0].Do("SCRIPT", "FLUSH") }
	must(t, s.Set(c, "ns", map[string][]byte{"k": []byte("a")}))
	flush()
	if ok, err := s.SetIf(c, "ns", "k", []byte("a"), []byte("b")); !ok || err != nil {
		t.Fatalf("SetIf after SCRIPT FLUSH = %v, %v", ok, err)
	}
	if ok, err := s.SetIf(c, "ns", "k", []byte("a"), []byte("c")); ok || err != nil {
		t.Fatalf("SetIf of a stale value = %v, %v; want false", ok, err)
	}
	flush()
	if ok, err := s.RemoveIf(c, "ns", "k", []byte("b")); !ok || err != nil {
		t.Fatalf("RemoveIf after SCRIPT FLUSH = %v, %v", ok, err)
	}
	l, err := s.LockResource("ns", "res", 5*time.Second)
	must(t, err)
	if ok, err := l.Acquire(c, 0, 0); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	flush()
	must(t, l.Refresh(c))
	flush()
	if v, err := l.ValidityTime(c); err != nil || v <= 0 {
		t.Fatalf("ValidityTime after SCRIPT FLUSH = %v, %v", v, err)
	}
	flush()
	must(t, l.Release(c))
	if n, _ := redis.Int(cl.Nodes[0].Do("EXISTS", "{ns},res"), nil); n != 0 {
		t.Fatal("the lock key outlived Release")
	}
}

// An error reply is an ErrRejectedByBackend that unwraps to a redis.Error;
// an ended context and a dead server are ErrNotConnected.
func testNodesErrors(t *testing.T, nodes Nodes) {
	cl := redistest.Start(t, 1)
	c, s := ctx(t), nodesStore(t, nodes(t, cl.Addrs()))
	WantErrorMapping(t, s)
	_, err := s.Get(c, "ns", "grp")
	must(t, err) // MGET reads a group as absent

	cl.Nodes[0].Kill()
	WantNotConnected(t, s)
	h, err := s.Health(c)
	must(t, err)
	if h.Reachable() || h.Instances[0].Error == "" {
		t.Fatalf("Health with the instance down = %+v", h)
	}
}

// commandsOnly is a node that hides any method but those of redlock.Node,
// PubSub included.
type commandsOnly struct{ redlock.Node }

// A store whose first node can subscribe and whose second cannot
// subscribes on the first instance and refuses with
// ErrSubscribeUnsupported on the second, where publishing still works.
func testNodesSubscribeMixed(t *testing.T, nodes Nodes) {
	cl := redistest.Start(t, 2)
	ns := nodes(t, cl.Addrs())
	ns[1] = commandsOnly{ns[1]}
	c, s := ctx(t), nodesStore(t, ns)
	on0, on1 := namespaceOn(t, s, 0), namespaceOn(t, s, 1)
	cb, next := collector(t)
	err := s.SubscribeChannel(c, on1, cb, "ch")
	wantErr(t, err, sdlstore.ErrSubscribeUnsupported)
	must(t, s.UnsubscribeChannel(c, on1, "ch"))
	err = s.SubscribeChannel(c, on0, cb, "ch")
	if _, ok := ns[0].(redlock.PubSubNode); !ok {
		wantErr(t, err, sdlstore.ErrSubscribeUnsupported)
		return
	}
	must(t, err)
	must(t, s.SetAndPublish(c, on1, sdlstore.ChannelEvents{"ch": {"unheard"}}, map[string][]byte{"k": {}}))
	must(t, s.SetAndPublish(c, on0, sdlstore.ChannelEvents{"ch": {"heard"}}, map[string][]byte{"k": {}}))
	if n := next(); !n.Is("ch", "heard") {
		t.Fatalf("got %+v, want the event of the instance that subscribes", n)
	}
}

// After the instance restarts, the subscriber opens a new connection
// through the node's PubSub and resubscribes: once it reports itself up
// again, every event published is delivered, in order.
func testNodesNotificationsAfterRestart(t *testing.T, nodes Nodes) {
	cl := redistest.Start(t, 1)
	ups := make(chan sdlstore.SubscriberEvent, 64)
	obs := sdlstore.Observer{Subscriber: func(e sdlstore.SubscriberEvent) {
		if e.Up {
			ups <- e
		}
	}}
	s, ok := subscribingStore(t, cl, nodes, sdlstore.WithObserver(obs),
		sdlstore.WithReconnectDelay(20*time.Millisecond), sdlstore.WithHealthCheckInterval(200*time.Millisecond))
	if !ok {
		return
	}
	c := ctx(t)
	cb, next := collector(t)
	must(t, s.SubscribeChannel(c, "ns", cb, "ch"))
	if e := nextUp(t, ups); e.Reconnect {
		t.Fatalf("first connection reported as a reconnection: %+v", e)
	}
	must(t, s.SetAndPublish(c, "ns", sdlstore.ChannelEvents{"ch": {"before"}}, map[string][]byte{"k": {}}))
	if n := next(); !n.Is("ch", "before") {
		t.Fatalf("got %+v", n)
	}
	node := cl.Nodes[0]
	node.Kill()
	node.Start()
	if e := nextUp(t, ups); !e.Reconnect {
		t.Fatalf("connection after the restart not reported as a reconnection: %+v", e)
	}
	awaitWrites(t, s, "ns")
	const events = 20
	for i := range events {
		must(t, s.SetAndPublish(c, "ns", sdlstore.ChannelEvents{"ch": {"after", strconv.Itoa(i)}}, map[string][]byte{"k": {}}))
	}
	for i := range events {
		if n := next(); !n.Is("ch", "after", strconv.Itoa(i)) {
			t.Fatalf("event %d after the restart: got %+v", i, n)
		}
	}
}

// nextUp returns the next report of a subscriber connection coming up.
func nextUp(t *testing.T, ups <-chan sdlstore.SubscriberEvent) sdlstore.SubscriberEvent {
	t.Helper()
	select {
	case e := <-ups:
		return e
	case <-time.After(15 * time.Second):
		t.Fatal("the subscriber connection did not come up within 15s")
		return sdlstore.SubscriberEvent{}
	}
}

// While the instance is down, SubscribeChannel fails with ErrNotConnected
// (the node's PubSub cannot open a connection) and keeps nothing; once it
// is back, subscribing works.
func testNodesSubscribeWhileDown(t *testing.T, nodes Nodes) {
	cl := redistest.Start(t, 1)
	s, ok := subscribingStore(t, cl, nodes, sdlstore.WithReconnectDelay(20*time.Millisecond))
	if !ok {
		return
	}
	c := ctx(t)
	cb, next := collector(t)
	node := cl.Nodes[0]
	node.Kill()
	short, cancel := context.WithTimeout(c, 5*time.Second)
	err := s.SubscribeChannel(short, "ns", cb, "ch")
	cancel()
	wantErr(t, err, sdlstore.ErrNotConnected)
	node.Start()
	AwaitSubscribe(t, s, cb, "ns", "ch")
	awaitWrites(t, s, "ns")
	must(t, s.SetAndPublish(c, "ns", sdlstore.ChannelEvents{"ch": {"x"}}, map[string][]byte{"k": {}}))
	if n := next(); !n.Is("ch", "x") {
		t.Fatalf("got %+v", n)
	}
}

// awaitWrites waits until a write to namespace ns goes through after its
// instance restarted: a client may hold connections from before the
// restart, which fail once each (a redigo pool's idle ones, rueidis's
// shared one), so that a publish that counts must come after it.
func awaitWrites(t *testing.T, s *sdlstore.Store, ns string) {
	t.Helper()
	c := ctx(t)
	for deadline := time.Now().Add(10 * time.Second); s.Set(c, ns, map[string][]byte{"k": {}}) != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no write went through within 10s of the restart")
		}
	}
}

// Close closes the connection the node's PubSub opened on every instance,
// and later calls fail with ErrClosed.
func testNodesCloseSubscribers(t *testing.T, nodes Nodes) {
	cl := redistest.Start(t, 2)
	s, ok := subscribingStore(t, cl, nodes)
	if !ok {
		return
	}
	c := ctx(t)
	cb, _ := collector(t)
	for i := range 2 {
		must(t, s.SubscribeChannel(c, namespaceOn(t, s, i), cb, "x"))
	}
	pubsubClients := func(i int) string {
		list, _ := redis.String(cl.Nodes[i].Do("CLIENT", "LIST", "TYPE", "pubsub"), nil)
		return list
	}
	for i := range 2 {
		if list := pubsubClients(i); strings.Count(list, "\n") != 1 || !strings.Contains(list, "sub=1") {
			t.Fatalf("instance %d: pubsub clients before Close:\n%s", i, list)
		}
	}
	must(t, s.Close())
	wantErr(t, s.SubscribeChannel(c, "a", cb, "x"), sdlstore.ErrClosed)
	wantErr(t, s.UnsubscribeChannel(c, "a", "x"), sdlstore.ErrClosed)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		left := pubsubClients(0) + pubsubClients(1)
		if left == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pubsub connections left after Close:\n%s", left)
		}
	}
}
