package sdltest

import (
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/sdlstore"
)

// New returns a Store over instances embedded Redis servers, in the test
// process, empty, and removed with everything the Store started when the
// test ends. opts are sdlstore's options (WithEventPolling, for example).
// It fails the test for fewer than 1 instance or a server that cannot
// start.
func New(t testing.TB, instances int, opts ...sdlstore.Option) *sdlstore.Store {
	t.Helper()
	s, _ := start(t, instances, opts...)
	return s
}

// start is New that also returns the address of each server.
func start(t testing.TB, instances int, opts ...sdlstore.Option) (*sdlstore.Store, []string) {
	t.Helper()
	if instances < 1 {
		t.Fatalf("sdltest: %d instances: at least 1 is needed", instances)
	}
	pools := make([]redlock.Pool, instances)
	addrs := make([]string, instances)
	for i := range pools {
		m := miniredis.NewMiniRedis()
		m.ClockTTL(true) // keys expire on the wall clock, as on Redis
		if err := m.Start(); err != nil {
			t.Fatalf("sdltest: embedded server %d: %v", i, err)
		}
		t.Cleanup(m.Close)
		p, err := redlock.NewPool("redis://" + m.Addr())
		if err != nil {
			t.Fatalf("sdltest: pool for %s: %v", m.Addr(), err)
		}
		t.Cleanup(func() { _ = p.Close() })
		pools[i], addrs[i] = p, m.Addr()
	}
	s, err := sdlstore.New(pools, opts...)
	if err != nil {
		t.Fatalf("sdltest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("sdltest: close: %v", err)
		}
	})
	return s, addrs
}
