package redlock

import (
	"context"
	"errors"
	"reflect"

	"github.com/gomodule/redigo/redis"
)

// Node carries the lock commands of a Factory to one Redis server over a
// client the caller already has. The modules goredis (go-redis v9) and
// rueidis implement it; PoolNode wraps a redigo Pool. A Node must be safe
// for concurrent use.
//
// Both methods run one command and return its reply in these forms: an
// integer as int64, a simple or bulk string as string or []byte, an array as
// []any of these forms, a map (RESP3, as CONFIG GET's) as map[any]any or
// map[string]any, and a nil reply as nil with a nil error. An error
// reply of the server (WRONGTYPE, NOSCRIPT, ERR unknown command) is returned
// as an error that is or wraps a ReplyError, so that the lock tells a
// server's refusal from a failure to reach it. Every other error is a
// failure of the node. Commands must honour ctx's deadline: the factory
// gives each command one node timeout and waits for it in Close.
//
// The commands of one Node may reach the server in another order than they
// were started in (a pool of connections); the lock never relies on their
// order.
type Node interface {
	// Do runs the command name with args, which are strings, ints and
	// int64s.
	Do(ctx context.Context, name string, args ...any) (any, error)
	// RunScript runs the Lua script s with keys and args (strings, ints and
	// int64s): with EVALSHA s.Hash(), then with EVAL s.Source() when the
	// server replies NOSCRIPT (after SCRIPT FLUSH or a restart).
	RunScript(ctx context.Context, s *Script, keys []string, args ...any) (any, error)
	// Addr names the server in errors and reports, as host:port.
	Addr() string
}

// Script is one of the lock's Lua scripts, as handed to Node.RunScript.
type Script struct {
	name string
	src  string
	hash string
	in   *script // the package's own form, for PoolNode
}

// Scripts returns the lock's Lua scripts, for a client that loads them on
// its nodes ahead of time (SCRIPT LOAD), as InitRedisNodes does for pools.
func Scripts() []*Script {
	out := make([]*Script, len(allScripts))
	for i, s := range allScripts {
		out[i] = s.pub
	}
	return out
}

// Name returns the script's name, such as "release" or "extend".
func (s *Script) Name() string { return s.name }

// Source returns the script's Lua source, for EVAL and SCRIPT LOAD.
func (s *Script) Source() string { return s.src }

// Hash returns the hex SHA1 of the source, for EVALSHA.
func (s *Script) Hash() string { return s.hash }

// ReplyError is an error reply of a Redis server, such as "NOSCRIPT No
// matching script" or "WRONGTYPE ...". A Node returns it for the server's
// refusals, as opposed to failures to reach the server.
type ReplyError string

func (e ReplyError) Error() string { return string(e) }

// PoolNode returns p as a Node. A Factory over PoolNodes only is the same
// as NewFactory over the pools.
func PoolNode(p Pool) Node { return poolNode{p} }

// poolNodes wraps every pool.
func poolNodes(pools []Pool) []Node {
	nodes := make([]Node, len(pools))
	for i, p := range pools {
		nodes[i] = poolNode{p}
	}
	return nodes
}

// allPools reports whether every node is a PoolNode, so that the factory
// may pipeline.
func allPools(nodes []Node) bool {
	for _, n := range nodes {
		_, pooled := clusterPoolOf(n)
		if _, ok := n.(poolNode); !ok && !pooled {
			return false
		}
	}
	return true
}

// poolNode is a redigo Pool as a Node. A factory does not call its methods:
// it gives the pool its own transports.
type poolNode struct{ p Pool }

func (n poolNode) Addr() string { return nodeAddr(n.p) }

func (n poolNode) Do(ctx context.Context, name string, args ...any) (any, error) {
	v, _, err := n.do(ctx, plainCmd(nil, name, args...), nil)
	return replyOf(v, err)
}

func (n poolNode) RunScript(ctx context.Context, s *Script, keys []string, args ...any) (any, error) {
	ks := make([]any, len(keys))
	for i, k := range keys {
		ks[i] = k
	}
	v, _, err := n.do(ctx, s.in.cmd(nil, ks, args...), nil)
	return replyOf(v, err)
}

// replyOf turns redigo's error reply into the Node contract's ReplyError.
func replyOf(v any, err error) (any, error) {
	var re redis.Error
	if errors.As(err, &re) {
		return nil, ReplyError(re)
	}
	return v, err
}

// checkNodes checks a node list for nil and repeated entries; the node
// count is checked by the option validation.
func checkNodes(nodes []Node) error {
	if len(nodes) > maxNodes {
		return invalidArg("%d nodes: at most %d are supported", len(nodes), maxNodes)
	}
	for i, n := range nodes {
		if isNilValue(handle(n)) {
			return invalidArg("node %d is nil", i)
		}
		for j := 0; j < i; j++ {
			if sameValue(handle(nodes[j]), handle(n)) {
				return invalidArg("node %d is the same %s as node %d", i, kindOf(n), j)
			}
		}
	}
	return nil
}

// handle is what identifies a node: the pool of a PoolNode, else the node.
func handle(n Node) any {
	if p, ok := n.(poolNode); ok {
		return p.p
	}
	return n
}

// kindOf names a node's kind in messages.
func kindOf(n Node) string {
	if _, ok := n.(poolNode); ok {
		return "pool"
	}
	return "node"
}

// isNilValue reports whether v is nil or a typed nil pointer.
func isNilValue(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Interface, reflect.Slice:
		return rv.IsNil()
	}
	return false
}

// sameValue reports whether a and b are the same handle. It never panics
// on values of a non-comparable type.
func sameValue(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Type() != vb.Type() || !va.Comparable() {
		return false
	}
	return va.Equal(vb)
}
