package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pipeline"
	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m, nil) }

// owner counts the goroutines a Conn starts and can refuse them.
type owner struct {
	wg      sync.WaitGroup
	started atomic.Int64
	refuse  atomic.Bool
}

func (o *owner) spawn(fn func()) bool {
	if o.refuse.Load() {
		return false
	}
	o.started.Add(1)
	o.wg.Add(1)
	go func() { defer o.wg.Done(); fn() }()
	return true
}

// call is a command whose reply lands in a channel.
type call struct {
	name  string
	args  []any
	reply chan result
}

type result struct {
	v   any
	err error
}

func newCall(name string, args ...any) *call {
	return &call{name: name, args: args, reply: make(chan result, 1)}
}

func (c *call) Command() (string, []any) { return c.name, c.args }
func (c *call) Reply(v any, err error)   { c.reply <- result{v, err} }

func (c *call) wait(t *testing.T) result {
	t.Helper()
	select {
	case r := <-c.reply:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("%s %v: no reply", c.name, c.args)
		return result{}
	}
}

// newConn returns a Conn that writes to a socket of its own, as the
// pools of redlock.NewPool and of the harness have it.
func newConn(t *testing.T, nd *redistest.Node, o *owner) *pipeline.Conn {
	t.Helper()
	return newConnWith(t, pipeline.FactsOf(nd.Pool()).Dial, o)
}

func newConnWith(t *testing.T, dial func(context.Context) (redis.Conn, error), o *owner) *pipeline.Conn {
	t.Helper()
	p := pipeline.New(pipeline.Config{Dial: dial, Stall: 250 * time.Millisecond, Spawn: o.spawn})
	t.Cleanup(func() { p.Close(); o.wg.Wait() })
	return p
}

// dialModes are the two ways a Conn writes: to a socket it dialled
// itself, and through redigo on a connection borrowed from a pool.
func dialModes(nd *redistest.Node) map[string]func(context.Context) (redis.Conn, error) {
	return map[string]func(context.Context) (redis.Conn, error){
		"socket":   pipeline.FactsOf(nd.Pool()).Dial,
		"borrowed": nd.Pool().GetContext,
	}
}

// TestRepliesReachTheirCalls sends from many goroutines at once: every
// call gets its own reply, and an error reply fails its call only.
func TestRepliesReachTheirCalls(t *testing.T) {
	c := redistest.Start(t, 1)
	for mode, dial := range dialModes(c.Nodes[0]) {
		t.Run(mode, func(t *testing.T) { repliesReachTheirCalls(t, newConnWith(t, dial, &owner{})) })
	}
}

func repliesReachTheirCalls(t *testing.T, p *pipeline.Conn) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				want := fmt.Sprintf("%d-%d", g, i)
				echo := newCall("ECHO", want)
				p.Send(echo)
				if i%50 == 0 { // an error reply between the others
					bad := newCall("NOSUCHCOMMAND")
					p.Send(bad)
					var re redis.Error
					if r := bad.wait(t); !errors.As(r.err, &re) {
						t.Errorf("an unknown command replied %v, %v; want an error reply", r.v, r.err)
					}
				}
				r := echo.wait(t)
				if got, _ := redis.String(r.v, r.err); got != want {
					t.Errorf("ECHO %s replied %q, %v", want, got, r.err)
				}
			}
		}()
	}
	wg.Wait()
}

// TestPutWaitsForWrite queues calls without writing them, as a quorum
// round does on every node under one lock: the first Put makes the caller
// the writer, the calls wait for its Write, and run in the order put.
func TestPutWaitsForWrite(t *testing.T) {
	c := redistest.Start(t, 1)
	p := newConn(t, c.Nodes[0], &owner{})
	warm := newCall("PING")
	p.Send(warm)
	warm.wait(t)
	pipeline.WaitIdle(p)
	first, second := newCall("INCR", "put"), newCall("INCR", "put")
	if !p.Put(first) {
		t.Fatal("Put on an idle Conn did not make the caller the writer")
	}
	if p.Put(second) {
		t.Fatal("a second Put made its caller the writer too")
	}
	select {
	case r := <-first.reply:
		t.Fatalf("a put call was written before Write: %v, %v", r.v, r.err)
	case <-time.After(50 * time.Millisecond):
	}
	p.Write()
	for i, call := range []*call{first, second} {
		r := call.wait(t)
		if n, err := redis.Int(r.v, r.err); n != i+1 || err != nil {
			t.Errorf("call %d put: INCR replied %d, %v; want %d", i, n, err, i+1)
		}
	}
}

// TestEnqueueFromReply resends a call from its Reply, as a NOSCRIPT retry
// does: the write happens in a goroutine of the owner.
func TestEnqueueFromReply(t *testing.T) {
	c := redistest.Start(t, 1)
	o := &owner{}
	p := newConn(t, c.Nodes[0], o)
	warm := newCall("PING")
	p.Send(warm)
	warm.wait(t)
	// The first call dialled in a goroutine that keeps the writer role
	// until the queue is empty; Send(r) must find the role free.
	pipeline.WaitIdle(p)
	before := o.started.Load()
	r := &resender{p: p, done: make(chan result, 1)}
	p.Send(r)
	select {
	case res := <-r.done:
		if got, _ := redis.String(res.v, res.err); got != "second" {
			t.Fatalf("the resent call replied %v, %v", res.v, res.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the resent call got no reply")
	}
	if o.started.Load() == before {
		t.Fatal("Enqueue wrote without a goroutine of the owner")
	}
}

// resender sends ECHO first, then, from its Reply, ECHO second.
type resender struct {
	p     *pipeline.Conn
	tries int
	done  chan result
}

func (r *resender) Command() (string, []any) {
	if r.tries == 0 {
		return "ECHO", []any{"first"}
	}
	return "ECHO", []any{"second"}
}

func (r *resender) Reply(v any, err error) {
	r.tries++
	if r.tries == 1 {
		r.p.Enqueue(r)
		return
	}
	r.done <- result{v, err}
}

// TestHungNodeFailsCallsThenRedials pauses the server: calls in flight
// fail once their replies are overdue, and after the server is back the
// next call dials a new connection.
func TestHungNodeFailsCallsThenRedials(t *testing.T) {
	c := redistest.Start(t, 1)
	for mode, dial := range dialModes(c.Nodes[0]) {
		t.Run(mode, func(t *testing.T) { hungNodeFailsCallsThenRedials(t, c.Nodes[0], newConnWith(t, dial, &owner{})) })
	}
}

func hungNodeFailsCallsThenRedials(t *testing.T, nd *redistest.Node, p *pipeline.Conn) {
	warm := newCall("PING")
	p.Send(warm)
	warm.wait(t)
	nd.Pause()
	stuck := newCall("PING")
	p.Send(stuck)
	if r := stuck.wait(t); r.err == nil {
		t.Fatal("a call to a hung server succeeded")
	}
	nd.Resume()
	deadline := time.Now().Add(10 * time.Second)
	for {
		again := newCall("PING")
		p.Send(again)
		r := again.wait(t)
		if r.err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no working connection after the server came back: %v", r.err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCloseAndRefusal: calls after Close fail with ErrClosed, and so do
// calls whose goroutine the owner refuses.
func TestCloseAndRefusal(t *testing.T) {
	c := redistest.Start(t, 1)
	o := &owner{}
	o.refuse.Store(true)
	p := newConn(t, c.Nodes[0], o)
	refused := newCall("PING")
	p.Send(refused) // needs a dial, which needs a goroutine
	if r := refused.wait(t); !errors.Is(r.err, pipeline.ErrClosed) {
		t.Fatalf("refused dial: %v, want ErrClosed", r.err)
	}
	o.refuse.Store(false)
	ok := newCall("PING")
	p.Send(ok)
	if r := ok.wait(t); r.err != nil {
		t.Fatal(r.err)
	}
	p.Close()
	late := newCall("PING")
	p.Send(late)
	if r := late.wait(t); !errors.Is(r.err, pipeline.ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", r.err)
	}
}

// TestSetupFailureFailsCalls: a connection whose setup fails is not used.
func TestSetupFailureFailsCalls(t *testing.T) {
	c := redistest.Start(t, 1)
	o := &owner{}
	pool := c.Nodes[0].Pool()
	broken := errors.New("setup refused")
	p := pipeline.New(pipeline.Config{Dial: pool.GetContext, Stall: time.Second, Spawn: o.spawn,
		Setup: func(context.Context, redis.Conn) error { return broken }})
	defer func() { p.Close(); o.wg.Wait() }()
	call := newCall("PING")
	p.Send(call)
	if r := call.wait(t); !errors.Is(r.err, broken) {
		t.Fatalf("call over a failed setup: %v, want the setup's error", r.err)
	}
}
