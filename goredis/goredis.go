package redlockgoredis

import (
	"context"
	"errors"
	"reflect"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redlockplus/redlock"
)

// Nodes returns one redlock.Node per client, in order, for
// redlock.NewFactoryFromNodes. A nil client gives a nil node, which the
// factory refuses with redlock.ErrInvalidArgument, as it refuses a client
// given twice. A *redis.ClusterClient is a whole cluster, not one node:
// its node fails every command with ErrClusterClient, which says to use
// ClusterNodes (a quorum whose other nodes answer still gets its votes, so
// the refusal shows in the errors of attempts and in the factory's
// Health).
func Nodes(clients ...redis.UniversalClient) []redlock.Node {
	nodes := make([]redlock.Node, len(clients))
	for i, c := range clients {
		if !isNil(c) {
			nodes[i] = nodeOf(c)
		}
	}
	return nodes
}

// isNil reports whether c is nil or a typed nil pointer.
func isNil(c redis.UniversalClient) bool {
	if c == nil {
		return true
	}
	v := reflect.ValueOf(c)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// node is one go-redis client as a redlock.Node. It is a comparable value,
// so that the factory sees the same client given twice.
type node struct{ c redis.UniversalClient }

var _ redlock.Node = node{}

func (n node) Do(ctx context.Context, name string, args ...any) (any, error) {
	cmd := command(ctx, &redlock.Command{Name: name, Args: args}, false)
	_ = n.c.Process(ctx, cmd)
	return reply(cmd.Result())
}

// RunScript runs s with go-redis's Script, which sends EVALSHA and falls
// back to EVAL on NOSCRIPT.
func (n node) RunScript(ctx context.Context, s *redlock.Script, keys []string, args ...any) (any, error) {
	return reply(scriptOf(s).Run(ctx, n.c, keys, args...).Result())
}

// Addr names the server: the client's address.
func (n node) Addr() string {
	if c, ok := n.c.(*redis.Client); ok {
		return c.Options().Addr
	}
	return "go-redis client"
}

// scripts holds go-redis's form of each lock script, made once.
var scripts sync.Map // *redlock.Script -> *redis.Script

func scriptOf(s *redlock.Script) *redis.Script {
	if rs, ok := scripts.Load(s); ok {
		return rs.(*redis.Script)
	}
	rs, _ := scripts.LoadOrStore(s, redis.NewScript(s.Source()))
	return rs.(*redis.Script)
}

// reply turns go-redis's result into the redlock.Node contract: redis.Nil
// is a nil reply, and an error reply of the server a redlock.ReplyError.
func reply(v any, err error) (any, error) {
	if err == nil {
		return value(v), nil
	}
	return nil, replyErr(err)
}

// replyErr is reply's error: apart, so that the error reply that
// errors.As fills is allocated only when there is an error.
func replyErr(err error) error {
	var re redis.Error
	switch {
	case errors.Is(err, redis.Nil):
		return nil
	case errors.As(err, &re):
		return redlock.ReplyError(re.Error())
	}
	return err
}

// value converts the error replies inside an array.
func value(v any) any {
	switch v := v.(type) {
	case redis.Error:
		return redlock.ReplyError(v.Error())
	case []any:
		for i, e := range v {
			v[i] = value(e)
		}
	}
	return v
}
