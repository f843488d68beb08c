package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/redlockplus/redlock/internal/fenceclock"
)

// FenceSuffix is appended to a lock's name to form the key of its fence on
// every node: lock "orders" keeps its fence in "orders:fence". The fence
// key has no TTL, so that it outlives every holding (one small string per
// fenced lock name, never deleted by this package). In Redis Cluster the
// two keys must share a slot, so a fenced lock's name needs a hash tag,
// such as "{orders}"; key prefixes and ACL patterns must cover both.
const FenceSuffix = ":fence"

// WithFencing sets whether each holding of the lock gets a fencing token: a
// number, larger than that of every earlier holding of the same name, to
// pass to the protected resource, which refuses requests carrying a token
// lower than one it has seen (see Lock.Fence and docs/SAFETY.md). It costs
// nothing more per acquisition while the client's clock is within w (an
// eighth of the TTL, at most 50 ms) of the nodes' clocks, and one more
// pipelined round trip (the write-back) otherwise; Extend mints nothing.
// Default false. Per lock, or a factory default.
func WithFencing(on bool) Option { return func(c *config) { c.fencing = on } }

// Fence returns the fencing token of the current holding: positive while
// the lock is held with WithFencing(true), 0 when it is not held or not
// fenced. Every holding of a name gets a new, larger token, also after
// AcquireOrExtend had to acquire anew.
func (l *Lock) Fence() int64 {
	if h := l.holding(); h != nil && h.live() {
		return h.fence
	}
	return 0
}

// Fence returns the fencing token of the current holding; see Lock.Fence.
// Nested acquisitions share it.
func (r *RLock) Fence() int64 { return r.lock.Fence() }

// fenceKey is the context key under which Factory.Do passes the token.
type fenceKey struct{}

// FenceFrom returns the fencing token of the lock that Factory.Do holds
// around the function given ctx, and whether there is one: false outside
// Do and for a lock without WithFencing(true).
func FenceFrom(ctx context.Context) (int64, bool) {
	t, ok := ctx.Value(fenceKey{}).(int64)
	return t, ok
}

// withFence returns ctx carrying h's token, if it has one.
func withFence(ctx context.Context, h *holding) context.Context {
	if h.fence == 0 {
		return ctx
	}
	return context.WithValue(ctx, fenceKey{}, h.fence)
}

// acquireCommand is an attempt's command for h: plain SET NX PX, or the
// fenced acquire script that also reads the node's fence. With loss
// detection on, the key is tracked later, by the detector's first check
// of the holding (lossdetection.go).
func (l *Lock) acquireCommand(h *holding) *command {
	if l.x != nil && l.x.setCmd != nil {
		return l.x.setCmd(h.arg)
	}
	if !l.cfg.fencing {
		return plainCmd(judgeSet, "SET", l.nameArg, h.arg, "NX", "PX", l.ttlArg).asVote(l.vote)
	}
	h.fence = fenceclock.Now()
	return acquireFencedScript.cmd(judgeFence, []any{l.nameArg, l.x.fenceArg}, h.arg, l.ttlArg, h.fence, l.fenceWindowArg).asVote(l.vote)
}

// maxFenceWindow bounds how far from a node's clock a proposed token may be
// for the node to commit it in the acquire round. Together with the TTL it
// sets w (fenceWindow); docs/SAFETY.md's restart assumption grows by 2w.
const maxFenceWindow = 50 * time.Millisecond

// fenceWindow is w in microseconds for a lock of the given TTL: an eighth
// of the TTL, at most maxFenceWindow, at least 1 µs.
func fenceWindow(ttl time.Duration) int64 {
	return max(min(ttl/8, maxFenceWindow).Microseconds(), 1)
}

// commitFence mints h's token after the attempt's round r won a quorum
// with the validity given. When a quorum of nodes committed the proposed
// token h.fence in the acquire script itself, that is the token. Otherwise
// t = 1 + the largest fence the quorum returned, written back to every node
// that still holds h's token: the token counts once a quorum committed it
// within the validity. The new validity is returned; on failure the error
// matches ErrFenceNotCommitted and the caller discards the attempt.
func (l *Lock) commitFence(ctx context.Context, h *holding, r round, validity time.Duration) (time.Duration, error) {
	proposed := h.fence
	h.fence = 0
	var t int64
	committed := 0
	r.each(func(_ *node, rep *reply) {
		if !rep.ok {
			return
		}
		if rep.committed && rep.value == proposed {
			committed++
		}
		t = max(t, rep.value)
	})
	if committed >= l.cfg.quorum {
		h.fence = proposed
		return validity, nil
	}
	t++
	// redigo writes t in decimal, which the script stores as it is.
	commit := fenceCommitScript.cmd(judgeOne, []any{l.nameArg, l.x.fenceArg}, h.arg, t).asVote(l.vote)
	c := l.fan.run(ctx, commit, false)
	c.free()
	validity = l.cfg.validityAt(r.start, time.Now())
	if !c.reached(l.cfg.quorum) {
		return 0, fmt.Errorf("%w: %w", ErrFenceNotCommitted, c.detail("fence committed", len(l.fan.nodes), l.cfg.quorum))
	}
	if validity <= 0 {
		return 0, fmt.Errorf("%w: validity %v after the commit is not positive", ErrFenceNotCommitted, validity)
	}
	h.fence = t
	return validity, nil
}
