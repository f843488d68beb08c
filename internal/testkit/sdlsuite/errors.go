package sdlsuite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/sdlstore"
)

// WantErrorMapping checks, on a store over live instances, that Redis
// error replies map to ErrRejectedByBackend and unwrap to the redis.Error,
// and that a call with an ended context maps to ErrNotConnected and
// matches context.Canceled. It leaves key "grp" of namespace "ns" a group
// and key "str" a string; sdlstore's own tests use it too.
func WantErrorMapping(t *testing.T, s *sdlstore.Store) {
	t.Helper()
	c := ctx(t)
	must(t, s.AddMember(c, "ns", "grp", []byte("m")))
	_, err := s.SetIf(c, "ns", "grp", []byte("a"), []byte("b"))
	wantErr(t, err, sdlstore.ErrRejectedByBackend)
	var re redis.Error
	if !errors.As(err, &re) {
		t.Fatalf("%v does not unwrap to a redis.Error", err)
	}
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
}

// WantNotConnected checks, on a store whose one instance is down, that a
// write and a lock's Acquire fail with ErrNotConnected and that IsActive
// reports false; sdlstore's own tests use it too.
func WantNotConnected(t *testing.T, s *sdlstore.Store) {
	t.Helper()
	c := ctx(t)
	wantErr(t, s.Set(c, "ns", map[string][]byte{"k": {}}), sdlstore.ErrNotConnected)
	if s.IsActive(c) {
		t.Fatal("IsActive with a dead instance")
	}
	l, err := s.LockResource("ns", "r", time.Second)
	must(t, err)
	_, err = l.Acquire(c, 0, 0)
	wantErr(t, err, sdlstore.ErrNotConnected)
}
