package sdlsuite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/redistest"
	"github.com/redlockplus/redlock/sdlstore"
)

// Nodes makes one redlock.Node per address (host:port), in order, over the
// client under test; the clients behind them are closed by t.Cleanup.
type Nodes func(t *testing.T, addrs []string) []redlock.Node

// RunNodes runs the suite on stores that sdlstore.NewFromNodes makes over
// nodes of fresh redis-server processes. Such a store cannot subscribe:
// each case that subscribes checks instead that SubscribeChannel refuses
// with ErrSubscribeUnsupported, and every other case runs as in Run
// (publishing included, seen by raw subscribers). Cases of their own check
// construction, addresses, NOSCRIPT recovery and error mapping.
func RunNodes(t *testing.T, nodes Nodes) {
	run(t, func(t *testing.T, n int, opts ...sdlstore.Option) (*sdlstore.Store, []string) {
		cl := redistest.Start(t, n)
		return nodesStore(t, nodes(t, cl.Addrs()), opts...), cl.Addrs()
	}, false)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, nodes Nodes)
	}{
		{"NodesConstruction", testNodesConstruction},
		{"NodesAddrs", testNodesAddrs},
		{"NodesNoScript", testNodesNoScript},
		{"NodesErrors", testNodesErrors},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, nodes) })
	}
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
	must(t, s.AddMember(c, "ns", "grp", []byte("m")))
	_, err := s.SetIf(c, "ns", "grp", []byte("a"), []byte("b"))
	wantErr(t, err, sdlstore.ErrRejectedByBackend)
	var re redis.Error
	if !errors.As(err, &re) {
		t.Fatalf("%v does not unwrap to a redis.Error", err)
	}
	_, err = s.Get(c, "ns", "grp")
	must(t, err) // MGET reads a group as absent
	must(t, s.Set(c, "ns", map[string][]byte{"str": []byte("x")}))
	_, err = s.IsMember(c, "ns", "str", []byte("m"))
	wantErr(t, err, sdlstore.ErrRejectedByBackend)

	cancelled, cancel := context.WithCancel(c)
	cancel()
	_, err = s.Get(cancelled, "ns", "k")
	wantErr(t, err, sdlstore.ErrNotConnected)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v does not match context.Canceled", err)
	}

	cl.Nodes[0].Kill()
	wantErr(t, s.Set(c, "ns", map[string][]byte{"k": {}}), sdlstore.ErrNotConnected)
	if s.IsActive(c) {
		t.Fatal("IsActive with a dead instance")
	}
	l, err := s.LockResource("ns", "r", time.Second)
	must(t, err)
	_, err = l.Acquire(c, 0, 0)
	wantErr(t, err, sdlstore.ErrNotConnected)
	h, err := s.Health(c)
	must(t, err)
	if h.Reachable() || h.Instances[0].Error == "" {
		t.Fatalf("Health with the instance down = %+v", h)
	}
}
