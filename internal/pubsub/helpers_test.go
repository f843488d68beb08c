package pubsub_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pubsub"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// msg is one OnMessage call.
type msg struct {
	channel, data string
}

// recorder collects what a Subscriber's callbacks report. Its channels are
// large; a callback that finds one full counts an overflow instead of
// blocking the reader, and the test fails on it.
type recorder struct {
	msgs        chan msg
	confirms    chan string
	connects    chan bool
	disconnects chan error
	overflow    atomic.Int64
}

func newRecorder() *recorder {
	return &recorder{
		msgs:        make(chan msg, 1<<14),
		confirms:    make(chan string, 1<<14),
		connects:    make(chan bool, 1<<10),
		disconnects: make(chan error, 1<<10),
	}
}

func put[T any](r *recorder, c chan T, v T) {
	select {
	case c <- v:
	default:
		r.overflow.Add(1)
	}
}

// config returns a Config over node whose callbacks feed r.
func (r *recorder) config(node *redistest.Node) pubsub.Config {
	return pubsub.Config{
		Dial:         dialer(node),
		OnMessage:    func(ch string, data []byte) { put(r, r.msgs, msg{ch, string(data)}) },
		OnConfirm:    func(ch string) { put(r, r.confirms, ch) },
		OnConnect:    func(re bool) { put(r, r.connects, re) },
		OnDisconnect: func(err error) { put(r, r.disconnects, err) },
		MinBackoff:   20 * time.Millisecond,
		MaxBackoff:   200 * time.Millisecond,
	}
}

// dialer opens plain redigo connections to node.
func dialer(node *redistest.Node) func(context.Context) (redis.Conn, error) {
	addr := node.Addr()
	return func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", addr)
	}
}

// start starts one redis-server for the test.
func start(t *testing.T) *redistest.Node {
	t.Helper()
	return redistest.Start(t, 1).Nodes[0]
}

// newSub starts a Subscriber on node, closed at cleanup, after which the
// test fails if a callback found the recorder full.
func newSub(t *testing.T, node *redistest.Node, edit func(*pubsub.Config)) (*pubsub.Subscriber, *recorder) {
	t.Helper()
	r := newRecorder()
	cfg := r.config(node)
	if edit != nil {
		edit(&cfg)
	}
	s, err := pubsub.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		if n := r.overflow.Load(); n > 0 {
			t.Errorf("%d callback reports found the recorder full", n)
		}
	})
	return s, r
}

// recv returns the next value of c, failing the test after 10 s.
func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10s", what)
		var zero T
		return zero
	}
}

// none fails the test if c yields a value within d.
func none[T any](t *testing.T, c <-chan T, d time.Duration, what string) {
	t.Helper()
	select {
	case v := <-c:
		t.Fatalf("unexpected %s: %v", what, v)
	case <-time.After(d):
	}
}

// ctx returns a context bounded for one test.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// numsub returns how many clients the server has subscribed to channel.
func numsub(t *testing.T, node *redistest.Node, channel string) int64 {
	t.Helper()
	v, err := redis.Values(node.Do("PUBSUB", "NUMSUB", channel), nil)
	if err != nil || len(v) != 2 {
		t.Fatalf("PUBSUB NUMSUB: %v %v", v, err)
	}
	n, _ := v[1].(int64)
	return n
}

// publish publishes data on channel and returns how many clients got it.
func publish(t *testing.T, node *redistest.Node, channel, data string) int64 {
	t.Helper()
	n, err := redis.Int64(node.Do("PUBLISH", channel, data), nil)
	must(t, err)
	return n
}

// eventually polls cond every 10 ms for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
	}
}

// wantErr fails the test unless errors.Is(err, target).
func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}
