package benchkit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockplus/redlock"
)

// otherToken is the value a Detect workload overwrites a lock's keys with:
// another holder's token, as far as the lock can tell.
const otherToken = "benchkit-other-holder"

// errLostEarly is counted when a Detect workload's lock was lost before its
// keys were touched.
var errLostEarly = errors.New("benchkit: the lock was lost before its keys were touched")

// errNoKey is counted when a key to break was not on its node: the
// target's LossKeys do not name its keys.
var errNoKey = errors.New("benchkit: no such key to break")

// runDetect takes w.Ops locks one after the other. Each is held w.Hold,
// then its LossKeys are deleted (even samples) or overwritten with another
// token keeping their expiry (odd samples) through w.Nodes, the last key
// of the quorum at a noted time; the sample is the time from then until
// the holder's Done closes, or a miss after w.MaxWait. The lock is then
// released (an error is expected and ignored) before the next sample.
func runDetect(ctx context.Context, t WatchTarget, w Workload) (Result, error) {
	res := Result{Workload: w.ID, Target: t.Name(), CycleSamples: NewRecorder(0), AcquireSamples: NewRecorder(0)}
	samples := max(w.Ops, 1)
	d := &DetectResult{MaxWait: w.MaxWait}
	res.Detect = d
	rec := NewRecorder(samples)
	res.DetectSamples = rec
	fail := func(err error) {
		res.Errors++
		if res.FirstError == "" {
			res.FirstError = err.Error()
		}
	}
	relCtx := context.WithoutCancel(ctx)
	start := time.Now()
	for i := 0; i < samples && ctx.Err() == nil; i++ {
		key := w.KeyPrefix + strconv.Itoa(i)
		h, err := t.NewWatcher(key, w.TTL)
		if err != nil {
			return res, fmt.Errorf("benchkit: %s: new watcher: %w", t.Name(), err)
		}
		if err := h.Lock(ctx); err != nil {
			fail(err)
			continue
		}
		done := h.Done()
		sleepCtx(ctx, w.Hold)
		select {
		case <-done:
			fail(errLostEarly)
			_ = h.Unlock(relCtx)
			continue
		default:
		}
		broken, err := breakKeys(ctx, w.Nodes, t.LossKeys(key), i%2 == 1)
		if err != nil {
			fail(err)
			_ = h.Unlock(relCtx)
			continue
		}
		wait := time.NewTimer(w.MaxWait)
		select {
		case <-done:
			rec.Record(time.Since(broken))
			d.Noticed++
		case <-wait.C:
			rec.Record(w.MaxWait)
			d.Missed++
		case <-ctx.Done():
		}
		wait.Stop()
		_ = h.Unlock(relCtx) // the lock is lost: an error is expected
	}
	res.Elapsed = time.Since(start)
	d.Samples = d.Noticed + d.Missed
	d.Latency = rec.Summary()
	res.Ops = int64(d.Samples)
	res.OpsPerSec = float64(res.Ops) / res.Elapsed.Seconds()
	return res, ctx.Err()
}

// breakKeys deletes keys through nodes, or overwrites each with otherToken
// keeping its expiry, one after the other, and returns the time just
// before the last command was sent: when the lock stopped being held.
func breakKeys(ctx context.Context, nodes []redlock.Pool, keys []NodeKey, overwrite bool) (time.Time, error) {
	var last time.Time
	for _, k := range keys {
		if k.Node < 0 || k.Node >= len(nodes) {
			return last, fmt.Errorf("benchkit: key %q on node %d of %d", k.Key, k.Node, len(nodes))
		}
		c, err := nodes[k.Node].GetContext(ctx)
		if err != nil {
			return last, err
		}
		last = time.Now()
		var reply any
		if overwrite {
			reply, err = redis.DoContext(c, ctx, "SET", k.Key, otherToken, "XX", "KEEPTTL")
		} else {
			reply, err = redis.DoContext(c, ctx, "DEL", k.Key)
		}
		c.Close()
		if err != nil {
			return last, err
		}
		if reply == nil || reply == int64(0) {
			return last, fmt.Errorf("%w: key %q on node %d", errNoKey, k.Key, k.Node)
		}
	}
	return last, nil
}
