package sdlstore

import (
	"context"
	"errors"
	"strings"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
)

// NewFromNodes returns a Store over nodes, one redlock.Node per Redis
// instance in hashing order (the order of DBAAS_CLUSTER_ADDR_LIST in
// ricsdl and sdlgo): the same nodes a lock factory takes from
// redlock.NewFactoryFromNodes, so that an xApp that already runs go-redis
// (module goredis) or rueidis (module rueidis) clients shares them with
// the SDL. Every command goes through Node.Do, the Lua scripts by EVALSHA
// with EVAL on NOSCRIPT, so the client's hooks, TLS and instrumentation
// see them all; the data, locks and notifications are the same bytes as
// those of New.
//
// Notifications come over the client too: an instance whose node is a
// redlock.PubSubNode (the nodes of the goredis and rueidis modules are,
// but for a go-redis Ring) gets its subscriber connection from the node's
// PubSub, which the Store health-checks, opens again and resubscribes
// after a failure, and closes in Close, as it does a pool's. A node that
// carries commands only cannot subscribe: SubscribeChannel on a namespace
// of its instance returns ErrSubscribeUnsupported (the *AndPublish
// operations publish as usual, and any other subscriber gets their
// events). Health reports no sentinel: a client that follows a sentinel
// (a go-redis failover client, for example) does that itself.
//
// It fails with ErrInvalidArgument for no nodes, a nil node, a node given
// twice, or an invalid option. It does not dial: use IsActive to check the
// instances. The nodes' clients stay owned by the caller, who closes them
// after Store.Close.
func NewFromNodes(nodes []redlock.Node, opts ...Option) (*Store, error) {
	cfg, err := applyOptions(opts)
	if err != nil {
		return nil, err
	}
	if err := checkInstances(nodes, "node"); err != nil {
		return nil, err
	}
	insts := make([]*instance, len(nodes))
	for i, n := range nodes {
		insts[i] = &instance{index: i, node: n}
	}
	return open(insts, cfg, nil), nil
}

// nodeDo runs one command through a node and returns its reply in the
// forms redigo gives (see nodeReply).
func nodeDo(ctx context.Context, n redlock.Node, cmd string, args []any) (any, error) {
	return nodeReply(n.Do(ctx, cmd, nodeArgs(args)...))
}

// nodeEval runs a script through a node: EVALSHA, then EVAL when the
// server does not know the script.
func nodeEval(ctx context.Context, n redlock.Node, sc *script, keysAndArgs []any) (any, error) {
	v, err := nodeDo(ctx, n, "EVALSHA", sc.commandArgs(sc.rs.Hash(), keysAndArgs))
	var re redis.Error
	if errors.As(err, &re) && strings.HasPrefix(string(re), "NOSCRIPT") {
		return nodeDo(ctx, n, "EVAL", sc.commandArgs(sc.src, keysAndArgs))
	}
	return v, err
}

// nodeArgs writes the values of this package's commands as strings, which
// the redlock.Node contract takes (with ints and int64s); a Go string holds
// any bytes.
func nodeArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if b, ok := a.([]byte); ok {
			out[i] = string(b)
		} else {
			out[i] = a
		}
	}
	return out
}

// nodeReply turns a reply of the redlock.Node contract into redigo's
// forms, which the rest of the package reads: strings as []byte, a
// server's error reply as a redis.Error (in an array too). Any other
// failure is the node's failure to reach its server, as the contract has
// it, and becomes an unreachableError.
func nodeReply(v any, err error) (any, error) {
	var re redlock.ReplyError
	switch {
	case err == nil:
		return nodeValue(v), nil
	case errors.As(err, &re):
		return nil, redis.Error(re)
	}
	return nil, unreachableError{err}
}

// nodeValue converts one value of a node's reply; see nodeReply.
func nodeValue(v any) any {
	switch v := v.(type) {
	case string:
		return []byte(v)
	case redlock.ReplyError:
		return redis.Error(v)
	case []any:
		for i, e := range v {
			v[i] = nodeValue(e)
		}
	}
	return v
}

// unreachableError is a node's failure other than an error reply of its
// server, which the redlock.Node contract makes a failure to reach the
// server: an ErrNotConnected.
type unreachableError struct{ err error }

func (e unreachableError) Error() string { return e.err.Error() }
func (e unreachableError) Unwrap() error { return e.err }
