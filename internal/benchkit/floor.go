package benchkit

import (
	"context"
	"sync"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockplus/redlock"
)

// floorTTL is the key TTL the floor sets: long enough never to expire
// during a cycle.
const floorTTL = "10000" // ms

// floorRelease is the release script of the floor: the same compare and
// delete as the lock libraries run.
var floorRelease = redis.NewScript(1, `
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`)

// Floor returns the floor target: raw redigo doing the commands of a
// Redlock cycle with no lock logic. Lock sends SET key token NX PX to every
// node at once, each on a connection of its node's pool in a goroutine of
// its own; Unlock runs the release script (GET == token, then DEL) the
// same way. With atQuorum false both wait for every node, else they return
// as soon as a quorum (N/2+1) of nodes said yes, and the late commands
// finish in the background (Close waits for them). Lock returns an error
// when fewer than a quorum of nodes set the key; it does not retry, clean
// up or keep the lock alive, so it only suits uncontended workloads.
func Floor(name string, pools []redlock.Pool, atQuorum bool) Target {
	return &floor{name: name, pools: pools, quorum: len(pools)/2 + 1, atQuorum: atQuorum}
}

type floor struct {
	name     string
	pools    []redlock.Pool
	quorum   int
	atQuorum bool
	bg       sync.WaitGroup
}

func (f *floor) Name() string { return f.name }

func (f *floor) NewLocker(key string) (Locker, error) {
	return &floorLocker{f: f, key: key}, nil
}

// Close waits for the commands still running after a quorum return.
func (f *floor) Close() error {
	f.bg.Wait()
	return nil
}

type floorLocker struct {
	f     *floor
	key   string
	token string
}

const (
	floorSet = iota
	floorDel
)

// floorReply is one node's answer.
type floorReply struct {
	ok  bool
	err error
}

func (l *floorLocker) Lock(ctx context.Context) error {
	l.token = randomHex(16)
	return l.f.fanout(ctx, floorSet, l.key, l.token)
}

func (l *floorLocker) Unlock(ctx context.Context) error {
	return l.f.fanout(ctx, floorDel, l.key, l.token)
}

// fanout runs op on every node in parallel and waits for every node, or
// for a quorum of yes when atQuorum.
func (f *floor) fanout(ctx context.Context, op int, key, token string) error {
	ch := make(chan floorReply, len(f.pools))
	f.bg.Add(len(f.pools))
	for _, p := range f.pools {
		go func() {
			defer f.bg.Done()
			ch <- floorDo(ctx, p, op, key, token)
		}()
	}
	oks, fails := 0, 0
	var firstErr error
	for range f.pools {
		r := <-ch
		if r.ok {
			oks++
		} else {
			fails++
			if firstErr == nil {
				firstErr = r.err
			}
		}
		if f.atQuorum && (oks >= f.quorum || fails > len(f.pools)-f.quorum) {
			break
		}
	}
	if oks >= f.quorum {
		return nil
	}
	if firstErr != nil {
		return firstErr
	}
	return errNoQuorum
}

// floorDo runs one command on one node.
func floorDo(ctx context.Context, p redlock.Pool, op int, key, token string) floorReply {
	c, err := p.GetContext(ctx)
	if err != nil {
		return floorReply{err: err}
	}
	defer c.Close()
	if op == floorSet {
		v, err := redis.DoContext(c, ctx, "SET", key, token, "NX", "PX", floorTTL)
		return floorReply{ok: err == nil && v != nil, err: err}
	}
	n, err := redis.Int(floorRelease.DoContext(ctx, c, key, token))
	return floorReply{ok: err == nil && n == 1, err: err}
}
