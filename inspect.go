package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/gomodule/redigo/redis"
)

// inspectScript returns the key's value and PTTL in one atomic read.
var inspectScript = redis.NewScript(1, `return {redis.call("GET", KEYS[1]), redis.call("PTTL", KEYS[1])}`)

// NodeState is what one node holds for a lock name.
type NodeState struct {
	Node  int           // index in the factory's node list
	Addr  string        // the node's address, when known
	Token string        // the token stored under the name; "" when the key is absent
	TTL   time.Duration // the key's remaining time to live; 0 when absent
	Err   error         // a *NodeError when the node did not answer
}

// Inspection is a snapshot of a lock name across all nodes, taken without
// holding the lock.
type Inspection struct {
	Name   string
	Quorum int
	Nodes  []NodeState
	// Holder is the token stored on at least a quorum of nodes, or "" when
	// no token has a quorum: the name is free or its holding is incomplete.
	Holder string
	// HolderTTL is the quorum-th largest TTL among the nodes holding
	// Holder: how long a quorum still holds it, before drift.
	HolderTTL time.Duration
}

// Held reports whether a quorum of nodes store the same token.
func (in Inspection) Held() bool { return in.Holder != "" }

// Inspect reads the lock name on every node (its token and remaining TTL)
// without taking the lock, for status displays and debugging. It fails
// with ErrInvalidArgument for an empty name and ErrClosed after Close; node
// failures are reported per node, not as an error.
func (f *Factory) Inspect(ctx context.Context, name string) (Inspection, error) {
	if name == "" {
		return Inspection{}, invalidArg("lock name is empty")
	}
	if f.isClosed() {
		return Inspection{}, ErrClosed
	}
	cfg := f.defaults
	if err := cfg.validate(len(f.nodes)); err != nil {
		return Inspection{}, err
	}
	in := Inspection{Name: name, Quorum: cfg.quorum, Nodes: make([]NodeState, len(f.nodes))}
	read := func(ctx context.Context, n *node) reply {
		st := NodeState{Node: n.index, Addr: n.addr}
		vals, err := redis.Values(n.evalRaw(ctx, inspectScript, name))
		if err == nil && len(vals) == 2 {
			st.Token, _ = redis.String(vals[0], nil)
			ms, _ := redis.Int64(vals[1], nil)
			st.TTL = time.Duration(max(ms, 0)) * time.Millisecond
		} else if err == nil {
			err = n.wrap(fmt.Errorf("unexpected reply %v", vals))
		}
		st.Err = err
		in.Nodes[n.index] = st // each goroutine writes its own element
		return reply{err: err}
	}
	fan := fanout{nodes: f.nodes, quorum: cfg.quorum, nodeTimeout: cfg.nodeTimeout, bg: &f.bg}
	fan.run(ctx, read, true, nil)
	counts := map[string][]time.Duration{}
	for _, st := range in.Nodes {
		if st.Token != "" {
			counts[st.Token] = append(counts[st.Token], st.TTL)
		}
	}
	for token, ttls := range counts {
		if len(ttls) >= in.Quorum {
			in.Holder, in.HolderTTL = token, quorumValidity(ttls, in.Quorum)
		}
	}
	return in, nil
}
