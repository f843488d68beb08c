package redlock

import (
	"context"
	"time"

	"github.com/gomodule/redigo/redis"
)

// NodeState is what one node holds for a lock name.
type NodeState struct {
	Node  int           // index in the factory's node list
	Addr  string        // the node's address, when known
	Token string        // the token stored under the name; "" when the key is absent
	TTL   time.Duration // the key's remaining time to live; 0 when absent
	Fence int64         // the last fencing token committed on the node; 0 when none
	Err   error         // a *NodeError when the node did not answer
	// Key is the name's key on the node: the name itself on an
	// independent node, the name under the master's hash tag on a node of
	// ClusterNodes ("{7}orders:42").
	Key string
	// Slot is the key's hash slot on a node of ClusterNodes, which its
	// master owns; -1 on an independent node.
	Slot int
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

// Inspect reads the lock name on every node (its token, remaining TTL and
// fence, see WithFencing) without taking the lock, for status displays and debugging. It fails
// with ErrInvalidArgument for an empty name and ErrClosed after Close; node
// failures are reported per node, not as an error.
func (f *Factory) Inspect(ctx context.Context, name string) (Inspection, error) {
	if name == "" {
		return Inspection{}, invalidArg("lock name is empty")
	}
	if err := f.o.begin(); err != nil {
		return Inspection{}, err
	}
	defer f.o.end()
	if err := f.set.check(ctx); err != nil {
		return Inspection{}, err
	}
	cfg := f.defaults
	if err := cfg.validate(len(f.nodes)); err != nil {
		return Inspection{}, err
	}
	in := Inspection{Name: name, Quorum: cfg.quorum, Nodes: make([]NodeState, len(f.nodes))}
	fan := f.fan(cfg.quorum, cfg.nodeTimeout, nil)
	r := fan.run(ctx, inspectScript.cmd(judgeValues, []any{name, name + FenceSuffix}), true)
	for i, n := range f.nodes {
		in.Nodes[i] = n.state(name)
		in.Nodes[i].Err = n.wrap(context.DeadlineExceeded)
	}
	r.each(func(n *node, rep *reply) {
		st := n.state(name)
		st.Err = rep.err
		if rep.err == nil {
			vals := rep.raw.([]any)
			st.Token, _ = redis.String(vals[0], nil)
			ms, _ := redis.Int64(vals[1], nil)
			st.TTL = time.Duration(max(ms, 0)) * time.Millisecond
			st.Fence, _ = redis.Int64(vals[2], nil)
		}
		in.Nodes[n.index] = st
	})
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

// state is a NodeState of name on n without the readings: where the key
// lives.
func (n *node) state(name string) NodeState {
	st := NodeState{Node: n.index, Addr: n.address(), Key: name, Slot: -1}
	if cn := n.cluster; cn != nil {
		p := cn.place.Load()
		st.Addr, st.Key, st.Slot = cn.Addr(), p.prefix+name, p.slot
	}
	return st
}
