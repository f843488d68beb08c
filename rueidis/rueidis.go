package redlockrueidis

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/redlockplus/redlock"
)

// Nodes returns one redlock.Node per client, in order, for
// redlock.NewFactoryFromNodes. A nil client gives a nil node, which the
// factory refuses with redlock.ErrInvalidArgument, as it refuses a client
// given twice. A cluster client (Mode() rueidis.ClientModeCluster) is a
// whole cluster, not one node: its node fails every command with
// ErrClusterClient, which says to use ClusterNodes (a quorum whose other
// nodes answer still gets its votes, so the refusal shows in the errors of
// attempts and in the factory's Health).
func Nodes(clients ...rueidis.Client) []redlock.Node {
	nodes := make([]redlock.Node, len(clients))
	for i, c := range clients {
		switch {
		case isNil(c):
		case c.Mode() == rueidis.ClientModeCluster:
			nodes[i] = wholeCluster{c}
		default:
			nodes[i] = node{c}
		}
	}
	return nodes
}

// isNil reports whether c is nil or a typed nil pointer.
func isNil(c rueidis.Client) bool {
	if c == nil {
		return true
	}
	v := reflect.ValueOf(c)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// node is one rueidis client as a redlock.Node. It is a comparable value,
// so that the factory sees the same client given twice.
type node struct{ c rueidis.Client }

var _ redlock.Node = node{}

func (n node) Do(ctx context.Context, name string, args ...any) (any, error) {
	cmd := n.c.B().Arbitrary(name).Args(strs(nil, args)...).Build()
	return result(n.c.Do(pipelined{ctx}, cmd))
}

// RunScript runs s as a batch of one: EVALSHA, then EVAL on NOSCRIPT, on
// the connection of the node's other commands (see command).
func (n node) RunScript(ctx context.Context, s *redlock.Script, keys []string, args ...any) (any, error) {
	batch := []redlock.Command{{Script: s, Keys: keys, Args: args}}
	n.DoBatch(ctx, batch)
	return batch[0].Reply, batch[0].Err
}

// Addr names the server by the client's address (addresses, sorted and
// joined by commas, for a client of several).
func (n node) Addr() string {
	addrs := make([]string, 0, 1)
	for a := range n.c.Nodes() {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	return strings.Join(addrs, ",")
}

// strs appends the lock's arguments (strings and integers) to dst as
// rueidis takes them.
func strs(dst []string, args []any) []string {
	for _, a := range args {
		switch a := a.(type) {
		case string:
			dst = append(dst, a)
		case int:
			dst = append(dst, strconv.Itoa(a))
		case int64:
			dst = append(dst, strconv.FormatInt(a, 10))
		case []byte:
			dst = append(dst, string(a))
		default:
			dst = append(dst, fmt.Sprint(a))
		}
	}
	return dst
}

// result is r in the forms of the redlock.Node contract. A string comes
// as []byte, the form the lock reads, in one allocation (ToAny's string
// would be copied again).
func result(r rueidis.RedisResult) (any, error) {
	if m, err := r.ToMessage(); err == nil && m.IsString() {
		s, _ := m.ToString()
		return []byte(s), nil
	}
	return reply(r.ToAny())
}

// reply turns rueidis's result into the redlock.Node contract: a nil reply
// is nil, and an error reply of the server a redlock.ReplyError.
func reply(v any, err error) (any, error) {
	if err == nil {
		return value(v), nil
	}
	if rueidis.IsRedisNil(err) {
		return nil, nil
	}
	if re, ok := rueidis.IsRedisErr(err); ok {
		return nil, redlock.ReplyError(re.Error())
	}
	return nil, err
}

// value converts the error replies inside an array.
func value(v any) any {
	switch v := v.(type) {
	case *rueidis.RedisError:
		return redlock.ReplyError(v.Error())
	case []any:
		for i, e := range v {
			v[i] = value(e)
		}
	}
	return v
}
