package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
)

// funcPool is a pool of a non-comparable type (a func), to prove the
// duplicate check never panics on such values.
type funcPool func(ctx context.Context) (redis.Conn, error)

func (f funcPool) GetContext(ctx context.Context) (redis.Conn, error) { return f(ctx) }

func TestBadConstruction(t *testing.T) {
	_, pools := cluster(t, 3)
	var nilPool *redis.Pool
	fp := funcPool(func(context.Context) (redis.Conn, error) { return nil, errors.New("unused") })
	cases := []struct {
		name  string
		lock  string
		nodes []redlock.Pool
		opts  []redlock.Option
		want  error
	}{
		{"empty name", "", pools, nil, redlock.ErrInvalidArgument},
		{"no nodes", "x", nil, nil, redlock.ErrInvalidArgument},
		{"two nodes", "x", pools[:2], nil, redlock.ErrInvalidArgument},
		{"nil node", "x", []redlock.Pool{pools[0], nil, pools[2]}, nil, redlock.ErrInvalidArgument},
		{"typed nil node", "x", []redlock.Pool{pools[0], nilPool, pools[2]}, nil, redlock.ErrInvalidArgument},
		{"duplicate node", "x", []redlock.Pool{pools[0], pools[1], pools[0]}, nil, redlock.ErrInvalidArgument},
		{"zero ttl", "x", pools, []redlock.Option{redlock.WithTTL(0)}, redlock.ErrInvalidArgument},
		{"negative ttl", "x", pools, []redlock.Option{redlock.WithTTL(-time.Second)}, redlock.ErrInvalidArgument},
		{"ttl below drift", "x", pools, []redlock.Option{redlock.WithTTL(2 * time.Millisecond)}, redlock.ErrInvalidArgument},
		{"negative retries", "x", pools, []redlock.Option{redlock.WithRetryTimes(-1)}, redlock.ErrInvalidArgument},
		{"negative retry delay", "x", pools, []redlock.Option{redlock.WithRetryDelay(-time.Millisecond)}, redlock.ErrInvalidArgument},
		{"drift factor 1", "x", pools, []redlock.Option{redlock.WithDriftFactor(1)}, redlock.ErrInvalidArgument},
		{"negative drift factor", "x", pools, []redlock.Option{redlock.WithDriftFactor(-0.1)}, redlock.ErrInvalidArgument},
		{"quorum at half", "x", pools, []redlock.Option{redlock.WithQuorum(1)}, redlock.ErrInvalidArgument},
		{"quorum above N", "x", pools, []redlock.Option{redlock.WithQuorum(4)}, redlock.ErrInvalidArgument},
		{"zero node timeout", "x", pools, []redlock.Option{redlock.WithNodeTimeout(0)}, redlock.ErrInvalidArgument},
		{"node timeout above ttl", "x", pools, []redlock.Option{redlock.WithTTL(time.Second), redlock.WithNodeTimeout(2 * time.Second)}, redlock.ErrInvalidArgument},
		{"negative autoextend timeout", "x", pools, []redlock.Option{redlock.WithAutoextendTimeout(-time.Second)}, redlock.ErrInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := redlock.NewLock(c.lock, c.nodes, c.opts...); !errors.Is(err, c.want) || !errors.Is(err, redlock.ErrRedlock) {
				t.Errorf("NewLock: %v, want %v", err, c.want)
			}
			if _, err := redlock.NewRLock(c.lock, c.nodes, c.opts...); !errors.Is(err, c.want) {
				t.Errorf("NewRLock: %v, want %v", err, c.want)
			}
			if c.lock == "" {
				return // the factory does not take a name
			}
			if _, err := redlock.NewFactory(c.nodes, c.opts...); !errors.Is(err, c.want) {
				t.Errorf("NewFactory: %v, want %v", err, c.want)
			}
		})
	}
	// Non-comparable pools are accepted (never compared with ==).
	if _, err := redlock.NewFactory([]redlock.Pool{fp, pools[1], pools[2]}); err != nil {
		t.Fatalf("func-typed pool: %v", err)
	}
	var ins *redlock.InsufficientNodesError
	if _, err := redlock.NewFactory(pools[:2]); !errors.As(err, &ins) || ins.NodeCount != 2 {
		t.Fatalf("two nodes: %v, want *InsufficientNodesError{2}", err)
	}
}

func TestFactoryLockReturnsConstructionErrorFromFirstCall(t *testing.T) {
	_, pools := cluster(t, 3)
	ctx := ctxT(t, 5*time.Second)
	f, err := redlock.NewFactory(pools)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range []*redlock.Lock{f.NewLock(""), f.NewLock("x", redlock.WithTTL(-1)), f.NewLock("x", redlock.WithQuorum(1))} {
		if _, err := l.Acquire(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("Acquire: %v", err)
		}
		if err := l.Release(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("Release: %v", err)
		}
		if _, err := l.Extend(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("Extend: %v", err)
		}
		if _, _, err := l.CheckTimes(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("CheckTimes: %v", err)
		}
		if err := l.StartAutoextend(0); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("StartAutoextend: %v", err)
		}
	}
	if _, err := f.NewRLock("").Acquire(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("RLock Acquire: %v", err)
	}
}

func TestCallsOutOfOrder(t *testing.T) {
	_, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	l, _ := redlock.NewLock("order", pools)
	if _, err := l.Extend(ctx); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Errorf("Extend before Acquire: %v", err)
	}
	if err := l.Release(ctx); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Errorf("Release before Acquire: %v", err)
	}
	if _, _, err := l.CheckTimes(ctx); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Errorf("CheckTimes before Acquire: %v", err)
	}
	if err := l.StartAutoextend(0); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Errorf("StartAutoextend before Acquire: %v", err)
	}
	if l.Locked(ctx) {
		t.Error("Locked before Acquire")
	}
	select {
	case <-l.Done():
	default:
		t.Error("Done not closed before Acquire")
	}
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Errorf("second Acquire of a held Lock: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Errorf("second Release: %v", err)
	}
	if _, err := l.Extend(ctx); !errors.Is(err, redlock.ErrInvalidOperation) {
		t.Errorf("Extend after Release: %v", err)
	}
}

func TestBadURLs(t *testing.T) {
	for _, u := range []string{"", "http://x:1", "redis://", "redis://h:1/abc", "::::"} {
		if _, err := redlock.NewPool(u); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("NewPool(%q) = %v, want ErrInvalidArgument", u, err)
		}
	}
	good := []string{"redis://127.0.0.1:1", "redis://127.0.0.1:2", "redis://127.0.0.1:3"}
	if _, err := redlock.NewFactoryFromURLs(append(good[:2:2], good[0])); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("duplicate URL: %v", err)
	}
	if _, err := redlock.NewFactoryFromURLs(good[:2]); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("two URLs: %v", err)
	}
	for _, u := range []string{"redis://:secret@localhost:6379/2", "rediss://example.org", "redis://u:p@h"} {
		if _, err := redlock.NewPool(u); err != nil {
			t.Errorf("NewPool(%q) = %v", u, err)
		}
	}
}

// TestServersDown: every node refuses connections. Each call returns a
// clear error naming the nodes, and nothing panics.
func TestServersDown(t *testing.T) {
	f, err := redlock.NewFactoryFromURLs([]string{"redis://127.0.0.1:1", "redis://127.0.0.1:2", "redis://127.0.0.1:3"}, redlock.WithRetryTimes(1), redlock.WithRetryDelay(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := ctxT(t, 10*time.Second)
	_, err = f.NewLock("down").TryAcquire(ctx)
	var ne *redlock.NodeError
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.As(err, &ne) || ne.Addr != "127.0.0.1:1" && ne.Addr != "127.0.0.1:2" && ne.Addr != "127.0.0.1:3" {
		t.Fatalf("TryAcquire with all nodes down = %v, want ErrNotAcquired with a NodeError naming the node", err)
	}
	if err := redlock.InitRedisNodes(ctx, []redlock.Pool{nil}); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("InitRedisNodes(nil node) = %v", err)
	}
}

// TestNoScriptFallback: after SCRIPT FLUSH the EVALSHA gets NOSCRIPT and the
// lock falls back to EVAL transparently.
func TestNoScriptFallback(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	if err := redlock.InitRedisNodes(ctx, pools); err != nil {
		t.Fatal(err)
	}
	l, _ := redlock.NewLock("noscript", pools, redlock.WithAutoextend(false))
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		c.Nodes[i].Do("SCRIPT", "FLUSH")
	}
	if _, err := l.Extend(ctx); err != nil {
		t.Fatalf("Extend after SCRIPT FLUSH: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release after SCRIPT FLUSH: %v", err)
	}
}
