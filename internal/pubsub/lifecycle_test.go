package pubsub_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pubsub"
)

// Close closes the connection, waits for the goroutines (goleak in TestMain
// checks that none is left), and later calls fail with ErrClosed.
func TestCloseStopsEverything(t *testing.T) {
	node := start(t)
	s, _ := newSub(t, node, nil)
	must(t, s.Subscribe("a"))
	must(t, s.WaitConfirmed(ctx(t), "a"))
	s.Close()
	s.Close()
	wantErr(t, s.Subscribe("b"), pubsub.ErrClosed)
	wantErr(t, s.Unsubscribe("a"), pubsub.ErrClosed)
	wantErr(t, s.WaitConfirmed(ctx(t), "a"), pubsub.ErrClosed)
	eventually(t, "server sees the connection closed", func() bool {
		list, _ := redis.String(node.Do("CLIENT", "LIST", "TYPE", "pubsub"), nil)
		return list == ""
	})
}

// Close ends a WaitConfirmed that waits on a server that answers nothing.
func TestCloseEndsWaiters(t *testing.T) {
	node := start(t)
	node.Pause()
	defer node.Resume()
	s, err := pubsub.New(newRecorder().config(node))
	must(t, err)
	must(t, s.Subscribe("a"))
	done := make(chan error, 1)
	go func() { done <- s.WaitConfirmed(context.Background(), "a") }()
	time.Sleep(100 * time.Millisecond) // let it wait (the server accepts but never answers)
	s.Close()
	wantErr(t, recv(t, done, "WaitConfirmed after Close"), pubsub.ErrClosed)
}

// WaitConfirmed ends with its context.
func TestWaitConfirmedContext(t *testing.T) {
	node := start(t)
	node.Pause()
	defer node.Resume()
	s, _ := newSub(t, node, nil)
	must(t, s.Subscribe("a"))
	c, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	wantErr(t, s.WaitConfirmed(c, "a"), context.DeadlineExceeded)
}

// The Subscriber starts its one goroutine through Spawn, which the owner can
// account for; a Spawn that refuses makes New fail.
func TestSpawn(t *testing.T) {
	node := start(t)
	var wg sync.WaitGroup
	var calls atomic.Int64
	s, _ := newSub(t, node, func(c *pubsub.Config) {
		c.Spawn = func(f func()) bool {
			calls.Add(1)
			wg.Add(1)
			go func() { defer wg.Done(); f() }()
			return true
		}
	})
	must(t, s.Subscribe("a"))
	must(t, s.WaitConfirmed(ctx(t), "a"))
	node.Kill()
	node.Start()
	must(t, s.Subscribe("b"))
	eventually(t, "resubscribed", func() bool { return s.WaitConfirmed(ctx(t), "a", "b") == nil })
	if n := calls.Load(); n != 1 {
		t.Fatalf("Spawn called %d times, want 1", n)
	}
	s.Close()
	wg.Wait() // returns: the spawned goroutine has exited

	cfg := newRecorder().config(node)
	cfg.Spawn = func(func()) bool { return false }
	if _, err := pubsub.New(cfg); !errors.Is(err, pubsub.ErrClosed) {
		t.Fatalf("New with a refusing Spawn: %v, want ErrClosed", err)
	}
}

func TestInvalidConfig(t *testing.T) {
	node := start(t)
	for name, edit := range map[string]func(*pubsub.Config){
		"nil Dial": func(c *pubsub.Config) { c.Dial = nil },
		"both Dial and Open": func(c *pubsub.Config) {
			c.Open = func(context.Context) (pubsub.Conn, error) { return nil, errors.New("unused") }
		},
		"negative HealthInterval": func(c *pubsub.Config) { c.HealthInterval = -1 },
		"negative DialTimeout":    func(c *pubsub.Config) { c.DialTimeout = -time.Second },
		"negative MinBackoff":     func(c *pubsub.Config) { c.MinBackoff = -1 },
		"negative MaxBackoff":     func(c *pubsub.Config) { c.MaxBackoff = -1 },
	} {
		cfg := newRecorder().config(node)
		edit(&cfg)
		if _, err := pubsub.New(cfg); !errors.Is(err, pubsub.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
}

// Callbacks may call Subscribe and Unsubscribe, and may take a lock under
// which the owner calls them: the Subscriber holds no lock while it runs a
// callback, nor does I/O under its own.
func TestCallbacksAndOwnerLock(t *testing.T) {
	node := start(t)
	var owner sync.Mutex
	var s *pubsub.Subscriber
	heard := make(chan string, 100)
	r := newRecorder()
	cfg := r.config(node)
	cfg.OnMessage = func(ch string, data []byte) {
		owner.Lock()
		defer owner.Unlock()
		if ch == "ctl" {
			_ = s.Subscribe(string(data)) // subscribe from the reader
			return
		}
		heard <- ch
	}
	cfg.OnConfirm = func(string) {
		owner.Lock()
		defer owner.Unlock() // the callback may take the owner's lock
	}
	s, err := pubsub.New(cfg)
	must(t, err)
	defer s.Close()
	must(t, s.Subscribe("ctl"))
	must(t, s.WaitConfirmed(ctx(t), "ctl"))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the owner churns the set under its lock meanwhile
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			owner.Lock()
			_ = s.Subscribe("churn")
			_ = s.Unsubscribe("churn")
			owner.Unlock()
		}
	}()
	publish(t, node, "ctl", "dyn")
	eventually(t, "dyn subscribed", func() bool { return s.WaitConfirmed(ctx(t), "dyn") == nil })
	publish(t, node, "dyn", "hello")
	if ch := recv(t, heard, "message on dyn"); ch != "dyn" {
		t.Fatalf("heard %q", ch)
	}
	close(stop)
	wg.Wait()
}
