package sdlsuite

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/sdlstore"
)

// Start makes a Store over n fresh, empty instances, removed when the test
// ends, and returns it with the host:port of each instance in hashing
// order (for the raw clients that check the wire format).
type Start func(t *testing.T, n int, opts ...sdlstore.Option) (*sdlstore.Store, []string)

// testCase is one test of the suite.
type testCase struct {
	name       string
	instances  []int // a subtest per count
	opts       []sdlstore.Option
	run        func(t *testing.T, e *env)
	subscribes bool // needs SubscribeChannel
}

// both is the usual instance counts: one, and three.
var both = []int{1, 3}

// cases is filled by the files of this package, one idea per file.
var cases []testCase

// Run runs every case of the suite as a subtest of t, on stores made by
// start.
func Run(t *testing.T, start Start) {
	run(t, func(t *testing.T, n int, opts ...sdlstore.Option) (*sdlstore.Store, []string, bool) {
		s, addrs := start(t, n, opts...)
		return s, addrs, true
	})
}

// run runs the cases on stores made by start, which also reports whether
// the store can subscribe; on one that cannot (RunNodes over nodes that
// are not PubSubNodes) each case that subscribes is replaced by
// testSubscribeUnsupported.
func run(t *testing.T, start func(t *testing.T, n int, opts ...sdlstore.Option) (*sdlstore.Store, []string, bool)) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range tc.instances {
				t.Run(strconv.Itoa(n)+"instances", func(t *testing.T) {
					s, addrs, subscribes := start(t, n, tc.opts...)
					e := &env{t: t, s: s, addrs: addrs}
					if tc.subscribes && !subscribes {
						testSubscribeUnsupported(t, e)
						return
					}
					tc.run(t, e)
				})
			}
		})
	}
}

// env is one store and raw access to its instances.
type env struct {
	t     *testing.T
	s     *sdlstore.Store
	addrs []string
}

// home returns the index of the instance that holds ns.
func (e *env) home(ns string) int { return e.s.InstanceIndex(ns) }

// raw dials instance i with plain redigo; closed at cleanup.
func (e *env) raw(i int) redis.Conn {
	e.t.Helper()
	c, err := redis.Dial("tcp", e.addrs[i], redis.DialReadTimeout(10*time.Second))
	if err != nil {
		e.t.Fatalf("dial instance %d (%s): %v", i, e.addrs[i], err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

// do runs one raw command on instance i and fails the test on an error.
func (e *env) do(i int, cmd string, args ...any) any {
	e.t.Helper()
	v, err := e.raw(i).Do(cmd, args...)
	if err != nil {
		e.t.Fatalf("raw %s on instance %d: %v", cmd, i, err)
	}
	return v
}

// rawSubscriber subscribes channels on instance i with plain redigo and
// returns a function that receives the next message (false after timeout).
func (e *env) rawSubscriber(i int, channels ...string) func(timeout time.Duration) (redis.Message, bool) {
	e.t.Helper()
	return RawSubscriber(e.t, e.raw(i), channels...)
}

// RawSubscriber subscribes channels on c with plain redigo, as a peer
// client would, and returns a function that receives the next message
// (false after timeout); sdlstore's own tests use it too.
func RawSubscriber(t *testing.T, c redis.Conn, channels ...string) func(timeout time.Duration) (redis.Message, bool) {
	t.Helper()
	psc := redis.PubSubConn{Conn: c}
	args := make([]any, len(channels))
	for j, ch := range channels {
		args[j] = ch
	}
	must(t, psc.Subscribe(args...))
	for range channels {
		if _, ok := psc.Receive().(redis.Subscription); !ok {
			t.Fatal("no subscription confirmation")
		}
	}
	return func(timeout time.Duration) (redis.Message, bool) {
		for {
			switch v := psc.ReceiveWithTimeout(timeout).(type) {
			case redis.Message:
				return v, true
			case error:
				return redis.Message{}, false
			}
		}
	}
}

// Ctx returns a context bounded for one test step; sdlstore's own tests
// use it too.
func Ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// Must fails the test on err.
func Must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// WantErr checks that err matches target and ErrSDL.
func WantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) || !errors.Is(err, sdlstore.ErrSDL) {
		t.Fatalf("error %v: want %v (and ErrSDL)", err, target)
	}
}

// Short names inside the suite.
var (
	ctx     = Ctx
	must    = Must
	wantErr = WantErr
)
