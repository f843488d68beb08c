package redlock

import (
	"context"
	"errors"
	"strconv"

	"github.com/gomodule/redigo/redis"
)

// node is one Redis node of a lock's quorum.
type node struct {
	index int
	addr  string
	pool  Pool
}

// newNodes checks a node list for nil and duplicate entries and wraps it.
// The node count is checked by the callers, which differ in what they need.
func newNodes(pools []Pool) ([]*node, error) {
	ns := make([]*node, len(pools))
	for i, p := range pools {
		if isNilPool(p) {
			return nil, invalidArg("node %d is nil", i)
		}
		for j := 0; j < i; j++ {
			if samePool(pools[j], p) {
				return nil, invalidArg("node %d is the same pool as node %d", i, j)
			}
		}
		ns[i] = &node{index: i, addr: nodeAddr(p), pool: p}
	}
	return ns, nil
}

// wrap turns err into a *NodeError for this node.
func (n *node) wrap(err error) error {
	if err == nil {
		return nil
	}
	return &NodeError{Node: n.index, Addr: n.addr, Err: err}
}

// do runs one command with ctx bounding both the pool wait and the reply.
func (n *node) do(ctx context.Context, cmd string, args ...any) (any, error) {
	c, err := n.pool.GetContext(ctx)
	if err != nil {
		return nil, n.wrap(err)
	}
	defer c.Close()
	v, err := redis.DoContext(c, ctx, cmd, args...)
	return v, n.wrap(err)
}

// eval runs a lock script and returns its integer reply.
func (n *node) eval(ctx context.Context, s *redis.Script, keysAndArgs ...any) (int64, error) {
	return redis.Int64(n.evalRaw(ctx, s, keysAndArgs...))
}

// evalRaw runs a script (EVALSHA, EVAL on NOSCRIPT) and returns its reply.
func (n *node) evalRaw(ctx context.Context, s *redis.Script, keysAndArgs ...any) (any, error) {
	c, err := n.pool.GetContext(ctx)
	if err != nil {
		return nil, n.wrap(err)
	}
	defer c.Close()
	v, err := s.DoContext(ctx, c, keysAndArgs...)
	return v, n.wrap(err)
}

// setNX sets key to token with a TTL in ms unless the key exists. It reports
// whether the key was set.
func (n *node) setNX(ctx context.Context, key, token string, ttlMs int64) (bool, error) {
	v, err := n.do(ctx, "SET", key, token, "NX", "PX", strconv.FormatInt(ttlMs, 10))
	if err != nil {
		return false, err
	}
	return v != nil, nil
}

// release deletes key iff it holds token.
func (n *node) release(ctx context.Context, key, token string) (bool, error) {
	v, err := n.eval(ctx, releaseScript, key, token)
	return v == 1, err
}

// extend resets key's TTL iff it holds token.
func (n *node) extend(ctx context.Context, key, token string, ttlMs int64) (bool, error) {
	v, err := n.eval(ctx, extendScript, key, token, ttlMs)
	return v == 1, err
}

// pttl returns key's remaining TTL in ms iff it holds token, else 0.
func (n *node) pttl(ctx context.Context, key, token string) (int64, error) {
	return n.eval(ctx, checkScript, key, token)
}

// loadScripts loads every lock script on the node.
func (n *node) loadScripts(ctx context.Context) error {
	c, err := n.pool.GetContext(ctx)
	if err != nil {
		return n.wrap(err)
	}
	defer c.Close()
	for _, src := range scriptSources {
		if _, err := redis.DoContext(c, ctx, "SCRIPT", "LOAD", src); err != nil {
			return n.wrap(err)
		}
	}
	return nil
}

// joinNodeErrors joins per-node failures; nil when there are none.
func joinNodeErrors(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}
