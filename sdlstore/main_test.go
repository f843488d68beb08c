package sdlstore_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
	"github.com/redlockplus/redlock/internal/testkit/sdlsuite"
	"github.com/redlockplus/redlock/sdlstore"
)

// exampleURL is the redis:// URL of the redis-server the Example functions
// talk to, which TestMain starts on a free port.
var exampleURL string

func TestMain(m *testing.M) {
	var examples *redistest.Cluster
	if redistest.Available() {
		var err error
		if examples, err = redistest.StartMain(1); err != nil {
			fmt.Fprintf(os.Stderr, "node of the examples: %v\n", err)
			os.Exit(1)
		}
		exampleURL = examples.URLs()[0]
	}
	code := m.Run()
	if examples != nil {
		examples.Stop() // before the leak check: its process has a waiter goroutine
	}
	if code == 0 {
		if err := leakcheck.Find(10 * time.Second); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// env is a store over real redis-server instances.
type env struct {
	t  *testing.T
	c  *redistest.Cluster
	s  *sdlstore.Store
	ps []redlock.Pool
}

// newEnv starts n instances and a Store over them.
func newEnv(t *testing.T, n int, opts ...sdlstore.Option) *env {
	t.Helper()
	c := redistest.Start(t, n)
	e := &env{t: t, c: c}
	for _, p := range c.Pools() {
		e.ps = append(e.ps, p)
	}
	s, err := sdlstore.New(e.ps, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	e.s = s
	return e
}

// node returns the instance holding ns.
func (e *env) node(ns string) *redistest.Node { return e.c.Nodes[e.s.InstanceIndex(ns)] }

// raw dials an instance with plain redigo.
func (e *env) raw(n *redistest.Node) redis.Conn {
	e.t.Helper()
	c, err := redis.Dial("tcp", n.Addr(), redis.DialReadTimeout(10*time.Second))
	if err != nil {
		e.t.Fatalf("dial %s: %v", n.Addr(), err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

// Helpers shared with the suite.
var (
	ctx     = sdlsuite.Ctx
	must    = sdlsuite.Must
	wantErr = sdlsuite.WantErr
)

// forInstances runs f as a subtest with 1 and with 3 instances.
func forInstances(t *testing.T, f func(t *testing.T, e *env)) {
	for _, n := range []int{1, 3} {
		t.Run(strconv.Itoa(n)+"instances", func(t *testing.T) { f(t, newEnv(t, n)) })
	}
}

// rawSubscriber subscribes channels on node n with plain redigo; see
// sdlsuite.RawSubscriber.
func (e *env) rawSubscriber(n *redistest.Node, channels ...string) func(timeout time.Duration) (redis.Message, bool) {
	e.t.Helper()
	return sdlsuite.RawSubscriber(e.t, e.raw(n), channels...)
}

// errorsIs is errors.Is, for brevity in tables.
func errorsIs(err, target error) bool { return errors.Is(err, target) }
