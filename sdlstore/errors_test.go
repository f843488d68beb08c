package sdlstore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
	"github.com/redlockplus/redlock/internal/testkit/sdlsuite"
	"github.com/redlockplus/redlock/sdlstore"
)

// countingPool counts the connections taken from a real node's pool.
type countingPool struct {
	p *redis.Pool
	n atomic.Int64
}

func (c *countingPool) GetContext(ctx context.Context) (redis.Conn, error) {
	c.n.Add(1)
	return c.p.GetContext(ctx)
}

// Every bad input is an ErrInvalidArgument and reaches no instance.
func TestBadInput(t *testing.T) {
	cl := redistest.Start(t, 3)
	var pools []*countingPool
	var nodes []redlock.Pool
	for _, p := range cl.Pools() {
		cp := &countingPool{p: p}
		pools = append(pools, cp)
		nodes = append(nodes, cp)
	}
	s, err := sdlstore.New(nodes)
	must(t, err)
	defer s.Close()
	single, err := sdlstore.New(nodes[:1])
	must(t, err)
	defer single.Close()
	c := ctx(t)
	cb := func(string, []string) {}
	v := []byte("v")
	ok := sdlstore.ChannelEvents{"ch": {"e"}}
	badEvents := map[string]sdlstore.ChannelEvents{
		"empty channel":       {"": {"e"}},
		"separator in event":  {"ch": {"a___b"}},
		"no events":           {"ch": {}},
		"nil events":          {"ch": nil},
		"ambiguous suffix":    {"ch": {"a_", "b"}},
		"ambiguous prefix":    {"ch": {"a", "_b"}},
		"one bad of many":     {"a": {"x"}, "b": {"y___"}},
		"separator as event":  {"ch": {"___"}},
		"long separator run":  {"ch": {"a____b"}},
		"underscore neighbor": {"ch": {"x", "_", "y"}},
	}
	type call func(ns string) error
	calls := map[string]call{
		"Set":   func(ns string) error { return s.Set(c, ns, map[string][]byte{"k": v}) },
		"SetIf": func(ns string) error { _, err := s.SetIf(c, ns, "k", v, v); return err },
		"SetIfNotExists": func(ns string) error {
			_, err := s.SetIfNotExists(c, ns, "k", v)
			return err
		},
		"Get":          func(ns string) error { _, err := s.Get(c, ns, "k"); return err },
		"FindKeys":     func(ns string) error { _, err := s.FindKeys(c, ns, "*"); return err },
		"FindAndGet":   func(ns string) error { _, err := s.FindAndGet(c, ns, "*"); return err },
		"Remove":       func(ns string) error { return s.Remove(c, ns, "k") },
		"RemoveIf":     func(ns string) error { _, err := s.RemoveIf(c, ns, "k", v); return err },
		"RemoveAll":    func(ns string) error { return s.RemoveAll(c, ns) },
		"AddMember":    func(ns string) error { return s.AddMember(c, ns, "g", v) },
		"RemoveMember": func(ns string) error { return s.RemoveMember(c, ns, "g", v) },
		"RemoveGroup":  func(ns string) error { return s.RemoveGroup(c, ns, "g") },
		"GetMembers":   func(ns string) error { _, err := s.GetMembers(c, ns, "g"); return err },
		"IsMember":     func(ns string) error { _, err := s.IsMember(c, ns, "g", v); return err },
		"GroupSize":    func(ns string) error { _, err := s.GroupSize(c, ns, "g"); return err },
		"SetAndPublish": func(ns string) error {
			return s.SetAndPublish(c, ns, ok, map[string][]byte{"k": v})
		},
		"SetIfAndPublish": func(ns string) error {
			_, err := s.SetIfAndPublish(c, ns, ok, "k", v, v)
			return err
		},
		"SetIfNotExistsAndPublish": func(ns string) error {
			_, err := s.SetIfNotExistsAndPublish(c, ns, ok, "k", v)
			return err
		},
		"RemoveAndPublish": func(ns string) error { return s.RemoveAndPublish(c, ns, ok, "k") },
		"RemoveIfAndPublish": func(ns string) error {
			_, err := s.RemoveIfAndPublish(c, ns, ok, "k", v)
			return err
		},
		"RemoveAllAndPublish": func(ns string) error { return s.RemoveAllAndPublish(c, ns, ok) },
		"SubscribeChannel":    func(ns string) error { return s.SubscribeChannel(c, ns, cb, "ch") },
		"UnsubscribeChannel":  func(ns string) error { return s.UnsubscribeChannel(c, ns, "ch") },
		"LockResource": func(ns string) error {
			_, err := s.LockResource(ns, "r", time.Second)
			return err
		},
	}
	check := func(t *testing.T, err error) {
		t.Helper()
		if !errors.Is(err, sdlstore.ErrInvalidArgument) || !errors.Is(err, sdlstore.ErrSDL) {
			t.Fatalf("error = %v, want ErrInvalidArgument", err)
		}
	}
	// Illegal namespaces, for every operation.
	for name, f := range calls {
		for _, ns := range []string{"", "a,b", "{a", "a}", "{a}"} {
			t.Run(name+"/namespace "+ns, func(t *testing.T) { check(t, f(ns)) })
		}
	}
	// Bad events, for every publishing operation.
	for evName, ev := range badEvents {
		pubs := map[string]error{
			"SetAndPublish": s.SetAndPublish(c, "ns", ev, map[string][]byte{"k": v}),
			"SetIfAndPublish": func() error {
				_, err := s.SetIfAndPublish(c, "ns", ev, "k", v, v)
				return err
			}(),
			"SetIfNotExistsAndPublish": func() error {
				_, err := s.SetIfNotExistsAndPublish(c, "ns", ev, "k", v)
				return err
			}(),
			"RemoveAndPublish": s.RemoveAndPublish(c, "ns", ev, "k"),
			"RemoveIfAndPublish": func() error {
				_, err := s.RemoveIfAndPublish(c, "ns", ev, "k", v)
				return err
			}(),
			"RemoveAllAndPublish": s.RemoveAllAndPublish(c, "ns", ev),
		}
		for name, err := range pubs {
			t.Run(name+"/"+evName, func(t *testing.T) { check(t, err) })
		}
	}
	// The other arguments.
	l1, err := single.LockResource("ns", "r", time.Second)
	must(t, err)
	l3, err := s.LockResource("ns", "r", time.Second)
	must(t, err)
	others := map[string]error{
		"Set nil data":     s.Set(c, "ns", nil),
		"Set empty data":   s.Set(c, "ns", map[string][]byte{}),
		"Set empty key":    s.Set(c, "ns", map[string][]byte{"": v}),
		"Set nil value":    s.Set(c, "ns", map[string][]byte{"k": nil}),
		"Get no keys":      func() error { _, err := s.Get(c, "ns"); return err }(),
		"Get empty key":    func() error { _, err := s.Get(c, "ns", "k", ""); return err }(),
		"Remove no keys":   s.Remove(c, "ns"),
		"Remove empty key": s.Remove(c, "ns", ""),
		"SetIf empty key":  func() error { _, err := s.SetIf(c, "ns", "", v, v); return err }(),
		"SetIf nil old":    func() error { _, err := s.SetIf(c, "ns", "k", nil, v); return err }(),
		"SetIf nil new":    func() error { _, err := s.SetIf(c, "ns", "k", v, nil); return err }(),
		"SetIfNotExists empty key": func() error {
			_, err := s.SetIfNotExists(c, "ns", "", v)
			return err
		}(),
		"SetIfNotExists nil data": func() error {
			_, err := s.SetIfNotExists(c, "ns", "k", nil)
			return err
		}(),
		"RemoveIf empty key":             func() error { _, err := s.RemoveIf(c, "ns", "", v); return err }(),
		"RemoveIf nil data":              func() error { _, err := s.RemoveIf(c, "ns", "k", nil); return err }(),
		"AddMember empty group":          s.AddMember(c, "ns", "", v),
		"AddMember no members":           s.AddMember(c, "ns", "g"),
		"AddMember nil member":           s.AddMember(c, "ns", "g", v, nil),
		"RemoveMember no members":        s.RemoveMember(c, "ns", "g"),
		"RemoveMember nil member":        s.RemoveMember(c, "ns", "g", nil),
		"RemoveMember empty group":       s.RemoveMember(c, "ns", "", v),
		"RemoveGroup empty group":        s.RemoveGroup(c, "ns", ""),
		"GetMembers empty group":         func() error { _, err := s.GetMembers(c, "ns", ""); return err }(),
		"IsMember empty group":           func() error { _, err := s.IsMember(c, "ns", "", v); return err }(),
		"IsMember nil member":            func() error { _, err := s.IsMember(c, "ns", "g", nil); return err }(),
		"GroupSize empty group":          func() error { _, err := s.GroupSize(c, "ns", ""); return err }(),
		"SetAndPublish nil data":         s.SetAndPublish(c, "ns", ok, nil),
		"RemoveAndPublish no keys":       s.RemoveAndPublish(c, "ns", ok),
		"SubscribeChannel nil callback":  s.SubscribeChannel(c, "ns", nil, "ch"),
		"SubscribeChannel no channels":   s.SubscribeChannel(c, "ns", cb),
		"SubscribeChannel empty channel": s.SubscribeChannel(c, "ns", cb, "ch", ""),
		"UnsubscribeChannel no channels": s.UnsubscribeChannel(c, "ns"),
		"UnsubscribeChannel empty":       s.UnsubscribeChannel(c, "ns", ""),
		"LockResource empty resource": func() error {
			_, err := s.LockResource("ns", "", time.Second)
			return err
		}(),
		"LockResource zero expiration": func() error {
			_, err := s.LockResource("ns", "r", 0)
			return err
		}(),
		"LockResource sub-ms expiration": func() error {
			_, err := single.LockResource("ns", "r", time.Microsecond)
			return err
		}(),
		"Acquire negative timeout": func() error {
			_, err := l1.Acquire(c, time.Millisecond, -1)
			return err
		}(),
		"Acquire negative interval": func() error {
			_, err := l3.Acquire(c, -1, 0)
			return err
		}(),
		"Acquire zero interval with timeout": func() error {
			_, err := l1.Acquire(c, 0, time.Second)
			return err
		}(),
	}
	for name, err := range others {
		t.Run(name, func(t *testing.T) { check(t, err) })
	}
	for i, p := range pools {
		if n := p.n.Load(); n != 0 {
			t.Fatalf("bad input reached instance %d (%d connections)", i, n)
		}
	}
	for _, n := range cl.Nodes {
		if size, _ := redis.Int(n.Do("DBSIZE"), nil); size != 0 {
			t.Fatalf("bad input wrote %d keys on %s", size, n.Addr())
		}
	}
}

func TestBadConstruction(t *testing.T) {
	cl := redistest.Start(t, 1)
	p := cl.Nodes[0].Pool()
	var typedNil *redis.Pool
	cases := map[string][]redlock.Pool{
		"no pools":  nil,
		"nil pool":  {p, nil},
		"typed nil": {typedNil},
		"duplicate": {p, p},
	}
	for name, nodes := range cases {
		_, err := sdlstore.New(nodes)
		t.Run(name, func(t *testing.T) { wantErr(t, err, sdlstore.ErrInvalidArgument) })
	}
	for name, opt := range map[string]sdlstore.Option{
		"health interval": sdlstore.WithHealthCheckInterval(0),
		"reconnect delay": sdlstore.WithReconnectDelay(-time.Second),
	} {
		_, err := sdlstore.New([]redlock.Pool{p}, opt)
		t.Run(name, func(t *testing.T) { wantErr(t, err, sdlstore.ErrInvalidArgument) })
	}
}

// Redis error replies, unreachable instances and ended contexts map to
// their sentinels and keep the cause.
func TestErrorMapping(t *testing.T) {
	e := newEnv(t, 1)
	sdlsuite.WantErrorMapping(t, e.s)

	dead := redistest.Start(t, 1).Nodes[0]
	deadPool := dead.Pool()
	dead.Kill()
	ds, err := sdlstore.New([]redlock.Pool{deadPool})
	must(t, err)
	defer ds.Close()
	sdlsuite.WantNotConnected(t, ds)
}
