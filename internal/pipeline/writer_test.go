package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pipeline"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// point is an argument that redigo formats with fmt.
type point struct{ x, y int }

// upper is a redis.Argument.
type upper string

func (u upper) RedisArg() any { return strings.ToUpper(string(u)) }

// TestSocketWritesArgumentsAsRedigo echoes an argument of every form over
// both ways of writing: the server gets the same bytes from each.
func TestSocketWritesArgumentsAsRedigo(t *testing.T) {
	c := redistest.Start(t, 1)
	args := []any{"text", "", []byte("bytes"), 42, int64(-7), 1.5, true, false, nil, upper("arg"), point{1, 2}, strings.Repeat("x", 10_000)}
	want := []string{"text", "", "bytes", "42", "-7", "1.5", "1", "0", "", "ARG", "{1 2}", strings.Repeat("x", 10_000)}
	for mode, dial := range dialModes(c.Nodes[0]) {
		t.Run(mode, func(t *testing.T) {
			p := newConnWith(t, dial, &owner{})
			for i, a := range args {
				echo := newCall("ECHO", a)
				p.Send(echo)
				r := echo.wait(t)
				if got, err := redis.String(r.v, r.err); err != nil || got != want[i] {
					t.Errorf("ECHO %#v replied %.40q, %v; want %.40q", a, got, err, want[i])
				}
			}
		})
	}
}

// TestBatchLongerThanTheReaderQueue writes one batch of more calls than
// the reader queues (1,024): the writer must let the first ones out before
// it waits for room, or the reader waits for replies that were never sent.
func TestBatchLongerThanTheReaderQueue(t *testing.T) {
	c := redistest.Start(t, 1)
	for mode, dial := range dialModes(c.Nodes[0]) {
		t.Run(mode, func(t *testing.T) {
			release := make(chan struct{})
			gated := func(ctx context.Context) (redis.Conn, error) {
				<-release // every call below queues behind the dial
				return dial(ctx)
			}
			o := &owner{}
			p := pipeline.New(pipeline.Config{Dial: gated, Stall: 5 * time.Second, Spawn: o.spawn})
			defer func() { p.Close(); o.wg.Wait() }()
			calls := make([]*call, 5000)
			for i := range calls {
				calls[i] = newCall("ECHO", fmt.Sprint(i))
				p.Send(calls[i])
			}
			close(release)
			var wg sync.WaitGroup
			for i, cl := range calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := cl.wait(t)
					if got, _ := redis.String(r.v, r.err); got != fmt.Sprint(i) {
						t.Errorf("call %d replied %v, %v", i, r.v, r.err)
					}
				}()
			}
			wg.Wait()
		})
	}
}

// wired is a call that brings its RESP: ECHO "wire", though its arguments
// say ECHO "args".
type wired struct{ *call }

func (w wired) Wire() []byte { return pipeline.AppendCommand(nil, "ECHO", []any{"wire"}) }

// TestEncodedCallWritesItsWire: a socket connection writes the bytes an
// Encoded call brings; redigo's writer encodes the arguments.
func TestEncodedCallWritesItsWire(t *testing.T) {
	c := redistest.Start(t, 1)
	want := map[string]string{"socket": "wire", "borrowed": "args"}
	for mode, dial := range dialModes(c.Nodes[0]) {
		t.Run(mode, func(t *testing.T) {
			p := newConnWith(t, dial, &owner{})
			echo := wired{newCall("ECHO", "args")}
			p.Send(echo)
			r := echo.wait(t)
			if got, err := redis.String(r.v, r.err); err != nil || got != want[mode] {
				t.Fatalf("replied %q, %v; want %q", got, err, want[mode])
			}
		})
	}
}
