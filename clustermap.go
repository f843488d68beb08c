package redlock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// shard is one master of a Redis Cluster and the slots it owns, as
// CLUSTER SLOTS reports them.
type shard struct {
	addr     string   // host:port
	id       string   // the master's cluster node id
	ranges   [][2]int // inclusive slot ranges, in order
	replicas int      // replicas listed with it
}

// owns reports whether the master owns slot.
func (s *shard) owns(slot int) bool {
	for _, r := range s.ranges {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// place is where a cluster node's lock keys live: a master, and the hash
// tag that puts them in a slot it owns. A place without an id (noPlace)
// means the cluster has no master left for the node.
type place struct {
	shard
	tag    string // the decimal tag, without braces
	prefix string // "{tag}", put in front of every key
	slot   int
}

// noPlace is the place of a node without a master.
var noPlace = place{slot: -1}

// reachable says why a node at p cannot send a command, or nil.
func (p *place) reachable() error {
	switch {
	case p.id == "":
		return errNoMaster
	case p.addr == "":
		return fmt.Errorf("the cluster does not know the address of master %s (cluster-announce-ip)", p.id)
	}
	return nil
}

// parseShards reads a CLUSTER SLOTS reply, in redigo's forms: one entry
// per slot range, {start, end, {ip, port, id, ...}, replicas...}. Ranges of
// one master are merged; masters come in the order of their first slot.
func parseShards(v any) ([]shard, error) {
	entries, err := redis.Values(v, nil)
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SLOTS replied %s: %w", replyText(v), err)
	}
	byID := map[string]*shard{}
	var out []*shard
	for _, e := range entries {
		f, err := redis.Values(e, nil)
		if err != nil || len(f) < 3 {
			return nil, fmt.Errorf("CLUSTER SLOTS entry %s is not {start, end, master, ...}", replyText(e))
		}
		start, err1 := redis.Int(f[0], nil)
		end, err2 := redis.Int(f[1], nil)
		addr, id, err3 := endpoint(f[2])
		if err := cmp.Or(err1, err2, err3); err != nil || start < 0 || end < start || end >= clusterSlots {
			return nil, fmt.Errorf("CLUSTER SLOTS entry %s: %v", replyText(e), cmp.Or(err, fmt.Errorf("bad slot range %d-%d", start, end)))
		}
		s := byID[id]
		if s == nil {
			s = &shard{addr: addr, id: id}
			byID[id] = s
			out = append(out, s)
		}
		s.ranges = append(s.ranges, [2]int{start, end})
		s.replicas = max(s.replicas, len(f)-3)
	}
	shards := make([]shard, len(out))
	for i, s := range out {
		slices.SortFunc(s.ranges, func(a, b [2]int) int { return a[0] - b[0] })
		shards[i] = *s
	}
	slices.SortFunc(shards, func(a, b shard) int { return a.ranges[0][0] - b.ranges[0][0] })
	return shards, nil
}

// endpoint reads a node of a CLUSTER SLOTS entry: {ip, port, id, ...}.
// The address is "" when the member that answered does not know it (an
// empty ip names the member itself, which poolCluster fills in).
func endpoint(v any) (addr, id string, err error) {
	f, err := redis.Values(v, nil)
	if err != nil || len(f) < 3 {
		return "", "", fmt.Errorf("node %s is not {ip, port, id}", replyText(v))
	}
	ip, err1 := redis.String(f[0], nil)
	port, err2 := redis.Int(f[1], nil)
	id, err3 := redis.String(f[2], nil)
	if err := cmp.Or(err1, err2, err3); err != nil {
		return "", "", err
	}
	if ip == "" || ip == "?" {
		return "", id, nil // unknown to the member that answered: its node cannot reach it
	}
	return net.JoinHostPort(ip, strconv.Itoa(port)), id, nil
}

// placeNodes decides where each of n nodes keeps its keys, given the
// masters and the previous places (none at first). A node stays with its
// master while that master owns slots; a node whose master is gone
// follows the master that now owns its slot (a failover promoted a
// replica), unless another node is there; what is left takes the unused
// masters in the order of their first slot. The tag is a function of the
// master's slots only (tagOf), so that clients agree on the keys.
func placeNodes(shards []shard, prev []place, n int) []place {
	out := make([]place, n)
	for i := range out {
		out[i] = noPlace
	}
	used := make([]bool, len(shards))
	take := func(i, j int) {
		used[j] = true
		s := shards[j]
		tag, slot := tagOf(s.owns)
		out[i] = place{shard: s, tag: tag, prefix: "{" + tag + "}", slot: slot}
	}
	find := func(ok func(s *shard) bool) int {
		for j := range shards {
			if !used[j] && ok(&shards[j]) {
				return j
			}
		}
		return -1
	}
	done := make([]bool, n)
	for _, rule := range []func(i int) int{
		func(i int) int { return find(func(s *shard) bool { return s.id == prev[i].id }) },
		func(i int) int { return find(func(s *shard) bool { return s.owns(prev[i].slot) }) },
	} {
		for i := range min(n, len(prev)) {
			if done[i] || prev[i].id == "" {
				continue
			}
			if j := rule(i); j >= 0 {
				take(i, j)
				done[i] = true
			}
		}
	}
	for i := range n {
		if !done[i] {
			if j := find(func(*shard) bool { return true }); j >= 0 {
				take(i, j)
			}
		}
	}
	return out
}

// minRefresh is the least time between two reads of a cluster's slot map,
// so that a storm of MOVED replies reads it once.
const minRefresh = 100 * time.Millisecond

// clusterMap is the slot map of one cluster, shared by the nodes that
// ClusterNodes returned for it. A MOVED or ASK reply, or a failure to
// reach a master, marks it stale; the next command of any of its nodes
// reads CLUSTER SLOTS again before it is sent.
type clusterMap struct {
	client ClusterClient
	nodes  []*clusterNode
	stale  atomic.Bool
	mu     sync.Mutex // held while the map is read
	last   time.Time  // when it was last read
}

// refresh reads the slot map and moves the nodes whose master or slot
// changed. Only one caller reads it at a time; the others go on with the
// places they have.
func (m *clusterMap) refresh(ctx context.Context) error {
	if !m.mu.TryLock() {
		return nil
	}
	defer m.mu.Unlock()
	if time.Since(m.last) < minRefresh {
		return nil
	}
	m.last = time.Now()
	m.stale.Store(false) // a redirection seen while reading marks it again
	v, err := m.client.Slots(ctx)
	if err == nil {
		var shards []shard
		if shards, err = parseShards(redigoValue(v)); err == nil {
			m.apply(shards)
			return nil
		}
	}
	m.stale.Store(true)
	return fmt.Errorf("reading the cluster's slot map: %w", err)
}

// apply places the nodes on shards; a node whose master or tag changed
// records when, for the node guard (nodeGuard.young).
func (m *clusterMap) apply(shards []shard) {
	prev := make([]place, len(m.nodes))
	for i, n := range m.nodes {
		prev[i] = *n.place.Load()
	}
	for i, p := range placeNodes(shards, prev, len(m.nodes)) {
		n := m.nodes[i]
		if p.id == prev[i].id && p.tag == prev[i].tag && p.addr == prev[i].addr {
			continue
		}
		n.place.Store(&p)
		n.epoch.Add(1)
		if prev[i].id != "" {
			n.moved.Store(int64(monotonic()))
		}
	}
}

// redirected reports whether err is a cluster's redirection or refusal
// (MOVED, ASK, TRYAGAIN, CLUSTERDOWN), which means the slot map changed.
func redirected(err error) bool {
	var re redis.Error
	var rp ReplyError
	msg := ""
	switch {
	case errors.As(err, &re):
		msg = string(re)
	case errors.As(err, &rp):
		msg = string(rp)
	default:
		return false
	}
	for _, p := range []string{"MOVED ", "ASK ", "TRYAGAIN", "CLUSTERDOWN"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// replyText renders a reply for a message, bulk strings as text.
func replyText(v any) string {
	switch v := v.(type) {
	case []byte:
		return strconv.Quote(string(v))
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = replyText(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprint(v)
}
