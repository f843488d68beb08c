package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/faultpool"
	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

func TestMain(m *testing.M) {
	var examples *redistest.Cluster
	if redistest.Available() {
		var err error
		if examples, err = redistest.StartMain(3); err != nil {
			fmt.Fprintf(os.Stderr, "nodes of the examples: %v\n", err)
			os.Exit(1)
		}
		nodeURLs = examples.URLs()
	}
	code := m.Run()
	if examples != nil {
		examples.Stop()
	}
	if code == 0 {
		if err := findLeaks(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// findLeaks reports goroutines still running once every bounded background
// task could have ended: a lock without a factory may still be retrying the
// cleanup of a failed attempt for up to 7 node timeouts (7 s by default).
func findLeaks() error {
	return leakcheck.Find(10 * time.Second)
}

// startURLs starts n real redis-server nodes for a test or benchmark.
func startURLs(tb testing.TB, n int) []string {
	tb.Helper()
	return redistest.Start(tb, n).URLs()
}

// cluster starts n real redis-server nodes and returns them with one
// redlock.NewPool per node, closed when the test ends.
func cluster(t *testing.T, n int) (*redistest.Cluster, []redlock.Pool) {
	t.Helper()
	c := redistest.Start(t, n)
	pools := make([]redlock.Pool, n)
	for i, u := range c.URLs() {
		p, err := redlock.NewPool(u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		pools[i] = p
	}
	return c, pools
}

// transports are the two ways locks reach their nodes: a factory's shared
// pipelined connections, and a pool connection per command (NewLock, or a
// factory with WithPipelining(false)).
var transports = []struct {
	name      string
	lockMaker func(t *testing.T, pools []redlock.Pool) func(name string, opts ...redlock.Option) *redlock.Lock
}{
	{"pipelined", func(t *testing.T, pools []redlock.Pool) func(string, ...redlock.Option) *redlock.Lock {
		f, err := redlock.NewFactory(pools)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f.NewLock
	}},
	{"pool", func(t *testing.T, pools []redlock.Pool) func(string, ...redlock.Option) *redlock.Lock {
		return func(name string, opts ...redlock.Option) *redlock.Lock {
			l, err := redlock.NewLock(name, pools, opts...)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
	}},
}

// ctxT returns a context that ends with the test, bounded by d.
func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// rawGet reads key on node i with plain redigo ("" when absent).
func rawGet(t *testing.T, c *redistest.Cluster, i int, key string) string {
	t.Helper()
	v, err := redis.String(c.Nodes[i].Do("GET", key), nil)
	if err == redis.ErrNil {
		return ""
	}
	if err != nil {
		t.Fatalf("GET %s on node %d: %v", key, i, err)
	}
	return v
}

// withFaults wraps every pool in a faultpool.Pool.
func withFaults(raw []redlock.Pool) ([]redlock.Pool, []*faultpool.Pool) {
	pools := make([]redlock.Pool, len(raw))
	faulty := make([]*faultpool.Pool, len(raw))
	for i := range raw {
		faulty[i] = &faultpool.Pool{Inner: raw[i]}
		pools[i] = faulty[i]
	}
	return pools, faulty
}

// countHolders counts the nodes on which key exists.
func countHolders(t *testing.T, c *redistest.Cluster, key string) int {
	t.Helper()
	n := 0
	for i := range c.Nodes {
		if rawGet(t, c, i, key) != "" {
			n++
		}
	}
	return n
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// intervals records who held a lock when, on one monotonic clock, and
// finds overlaps between different holders.
type intervals struct {
	mu   sync.Mutex
	base time.Time
	list []interval
}

type interval struct {
	holder     int
	start, end time.Duration
}

func newIntervals() *intervals { return &intervals{base: time.Now()} }

// add records a holding from acquired until the earlier of released and the
// end of its validity.
func (iv *intervals) add(holder int, acquired time.Time, validity time.Duration, released time.Time) {
	end := acquired.Add(validity)
	if released.Before(end) {
		end = released
	}
	iv.mu.Lock()
	defer iv.mu.Unlock()
	iv.list = append(iv.list, interval{holder, acquired.Sub(iv.base), end.Sub(iv.base)})
}

// overlaps counts pairs of intervals of different holders that intersect.
func (iv *intervals) overlaps() int {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	n := 0
	for i, a := range iv.list {
		for _, b := range iv.list[i+1:] {
			if a.holder != b.holder && a.start < b.end && b.start < a.end {
				n++
			}
		}
	}
	return n
}

// factory starts 3 real nodes and a Factory over them with opts, closed
// when the test ends.
func factory(t *testing.T, opts ...redlock.Option) (*redistest.Cluster, *redlock.Factory) {
	t.Helper()
	c, pools := cluster(t, 3)
	f, err := redlock.NewFactory(pools, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return c, f
}

// heardTries bounds the attempts of untilHeard.
const heardTries = 5

// untilHeard runs attempt until it ends other than by giving up on a silent
// node (ErrContested), heardTries times at most, running settle between
// tries, and returns its last error. An attempt that another holder's key
// refused waits only a few milliseconds for the nodes still silent: on a
// loaded host a node that was dialled, or whose goroutine ran late, misses
// that, and the attempt says nothing about it. A test that asserts what a
// node answers needs an attempt that heard it.
func untilHeard(attempt func() error, settle func()) error {
	err := attempt()
	for try := 1; try < heardTries && errors.Is(err, redlock.ErrContested); try++ {
		settle()
		err = attempt()
	}
	return err
}
