package benchkit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/pipeline"
)

// PipeFloor returns the pipelined floor: the commands of a Redlock cycle
// with no lock logic, over the transport the library's factory uses (one
// auto-pipelined connection per node, internal/pipeline, dialled on its
// own socket for a pool of redlock.NewPool). Lock sends SET key token NX
// PX to every node and returns once a quorum set it; Unlock sends the
// release script and returns once a quorum answered. No token order across
// nodes, no node guard, no holding, expiry, autoextension, loss detection
// or wake-ups: what is left of the client's CPU per cycle is the
// transport's, the part of the lock's cost that no lock logic can remove.
// Like Floor, it suits uncontended workloads only.
func PipeFloor(name string, pools []redlock.Pool) Target {
	f := &pipeFloor{name: name, quorum: len(pools)/2 + 1}
	for _, p := range pools {
		dial := p.GetContext
		if rp, ok := p.(*redis.Pool); ok {
			if d := pipeline.FactsOf(rp).Dial; d != nil {
				dial = d
			}
		}
		f.conns = append(f.conns, pipeline.New(pipeline.Config{
			Dial:  dial,
			Stall: time.Second,
			Spawn: f.spawn,
			Setup: func(_ context.Context, c redis.Conn) error { return floorRelease.Load(c) },
		}))
	}
	return f
}

type pipeFloor struct {
	name   string
	quorum int
	conns  []*pipeline.Conn
	bg     sync.WaitGroup
}

func (f *pipeFloor) spawn(fn func()) bool {
	f.bg.Go(fn)
	return true
}

func (f *pipeFloor) Name() string { return f.name }

func (f *pipeFloor) NewLocker(key string) (Locker, error) {
	return &pipeFloorLocker{f: f, key: key}, nil
}

// Close shuts the connections once their replies are in.
func (f *pipeFloor) Close() error {
	for _, c := range f.conns {
		c.Close()
	}
	f.bg.Wait()
	return nil
}

type pipeFloorLocker struct {
	f     *pipeFloor
	key   string
	token string
}

func (l *pipeFloorLocker) Lock(ctx context.Context) error {
	l.token = randomHex(16)
	return l.f.round(ctx, "SET", l.key, l.token, "NX", "PX", floorTTL)
}

func (l *pipeFloorLocker) Unlock(ctx context.Context) error {
	return l.f.round(ctx, "EVALSHA", floorRelease.Hash(), 1, l.key, l.token)
}

// round sends one command to every node and waits for a quorum of yes (OK
// or 1), or for so many noes that a quorum is out of reach.
func (f *pipeFloor) round(ctx context.Context, name string, args ...any) error {
	r := &floorRound{quorum: int32(f.quorum), nodes: int32(len(f.conns)), done: make(chan struct{}, 1)}
	for _, c := range f.conns {
		c.Send(&floorCall{r: r, name: name, args: args})
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if r.oks.Load() >= r.quorum {
		return nil
	}
	return errNoQuorum
}

// floorRound counts a round's replies and wakes its caller once, at the
// reply that decides it.
type floorRound struct {
	quorum, nodes int32
	oks, noes     atomic.Int32
	done          chan struct{}
}

// floorCall is one node's command of a round.
type floorCall struct {
	r    *floorRound
	name string
	args []any
}

func (c *floorCall) Command() (string, []any) { return c.name, c.args }

func (c *floorCall) Reply(v any, err error) {
	n, _ := v.(int64)
	if err == nil && (v == "OK" || n == 1) {
		if c.r.oks.Add(1) == c.r.quorum {
			c.r.done <- struct{}{}
		}
		return
	}
	if c.r.noes.Add(1) == c.r.nodes-c.r.quorum+1 {
		c.r.done <- struct{}{}
	}
}
