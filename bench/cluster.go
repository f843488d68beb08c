package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/benchkit"
)

// The targets on servers of their own (target.start): this library over a
// Redis Cluster of 3 masters (redlock.ClusterNodes), without replicas and
// with one replica per master and WithReplicaAck(1), and over 3
// independent nodes with a replica each and WithReplicaAck(1), which
// isolates the cost of the WAIT from the cluster's. Each starts its
// servers from the tool's redis-server binary, with the settings of the
// tool's nodes (no persistence), when it is made for a workload, and stops
// them when it is closed: a run that does not select them starts nothing
// more.

// clusterMasters is the number of masters of a cluster target, and of
// nodes of redlock-ack: as many as the tool's nodes in W1-3 and W2.
const clusterMasters = 3

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// ownStartTimeout bounds the start of a target's servers, a cluster's
// creation and its replicas' first synchronisation included: a few
// seconds when things go well, the bound is for a loaded machine.
const ownStartTimeout = time.Minute

// clusterArgs are the arguments of a cluster target's nodes after the
// tool's own. Each node has its own directory (--dir), so the relative
// cluster-config-file is a file per node. The node timeout is Redis's
// default, 15 s, so that a stall of a loaded machine does not get a
// master flagged as failing in the middle of a run. Replica migration is
// off, so that each replica stays with its master.
var clusterArgs = []string{
	"--cluster-enabled", "yes",
	"--cluster-config-file", "nodes.conf",
	"--cluster-allow-replica-migration", "no",
}

// replicationArgs are given to every node of the targets with replicas,
// masters and replicas alike: Redis 7.0 otherwise waits 5 s for more
// replicas before each full synchronisation. They change nothing for a
// node without replicas.
var replicationArgs = []string{"--repl-diskless-sync-delay", "0"}

// ownServers describes the servers of each target made by start, for the
// report: the node figures of its rows are theirs.
var ownServers = map[string]string{
	"redlock-cluster":     "the 3 masters of its own Redis Cluster (their CPU includes the cluster bus)",
	"redlock-cluster-ack": "the 3 masters and 3 replicas of its own Redis Cluster (replication and the CPU of the cluster bus included)",
	"redlock-ack":         "its own 3 nodes and their 3 replicas (replication included)",
}

// ownServerTargets are the targets on servers of their own, on the
// uncontended cycle of 3 nodes (W1-3) and W2: the cost of a cluster and of
// WithReplicaAck(1), beside redlock on the tool's 3 independent nodes.
func ownServerTargets() []target {
	runs := func(w benchkit.Workload) bool { return w.ID == "W1-3" || w.ID == "W2" }
	ack := redlock.WithReplicaAck(1)
	return []target{
		{name: "redlock-cluster", runs: runs,
			start: func(ctx context.Context, bin string, _ benchkit.Workload) (benchkit.Target, error) {
				return clusterTarget(ctx, bin, "redlock-cluster", 0)
			}},
		{name: "redlock-cluster-ack", runs: runs,
			start: func(ctx context.Context, bin string, _ benchkit.Workload) (benchkit.Target, error) {
				return clusterTarget(ctx, bin, "redlock-cluster-ack", 1, ack)
			}},
		{name: "redlock-ack", runs: runs,
			start: func(ctx context.Context, bin string, _ benchkit.Workload) (benchkit.Target, error) {
				return replicatedTarget(ctx, bin, "redlock-ack", ack)
			}},
	}
}

// ownTarget is a target on servers it started: Close closes the target,
// then its clients, then stops the servers.
type ownTarget struct {
	benchkit.KeepTarget                // nil until made
	closers             []func() error // the clients, closed after the target
	stats               []*redis.Pool  // raw pools of every server, for INFO
	servers             []*redisNode   // replicas first, so that a master's shutdown waits for none
}

var _ serverOwner = (*ownTarget)(nil)

func (t *ownTarget) statNodes() []redlock.Pool { return lockPools(t.stats) }

func (t *ownTarget) Close() error {
	var err error
	if t.KeepTarget != nil {
		err = t.KeepTarget.Close()
	}
	err = errors.Join(err, closeAll(t.closers))
	closePools(t.stats)
	stopNodes(t.servers)
	return err
}

// addrsOf returns the addresses of nodes.
func addrsOf(nodes []*redisNode) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.addr
	}
	return out
}

// clusterTarget starts a Redis Cluster of clusterMasters masters with
// replicas replicas each and returns the target name over it: a factory
// over redlock.ClusterNodes with opts.
func clusterTarget(ctx context.Context, bin, name string, replicas int, opts ...redlock.Option) (benchkit.Target, error) {
	ctx, cancel := context.WithTimeout(ctx, ownStartTimeout)
	defer cancel()
	started := time.Now()
	t := &ownTarget{}
	masters, reps, err := startCluster(ctx, bin, replicas, t)
	if err == nil {
		err = benchkit.NodesReady(ctx, started)
	}
	if err == nil {
		err = t.finish(addrsOf(slices.Concat(reps, masters)))
	}
	var nodes []redlock.Node
	if err == nil {
		nodes, err = redlock.ClusterNodes(ctx, addrsOf(masters))
	}
	if err == nil {
		// The nodes share the cluster's pools: closing one closes them.
		if c, ok := nodes[0].(interface{ Close() error }); ok {
			t.closers = append(t.closers, c.Close)
		}
		t.KeepTarget, err = benchkit.OursNodes(name, nodes, opts...)
	}
	if err != nil {
		return nil, errors.Join(err, t.Close())
	}
	return t, nil
}

// replicatedTarget starts clusterMasters independent nodes with a replica
// each (REPLICAOF) and returns the target name over the nodes: a factory
// over pools like those of the other targets, with opts.
func replicatedTarget(ctx context.Context, bin, name string, opts ...redlock.Option) (benchkit.Target, error) {
	ctx, cancel := context.WithTimeout(ctx, ownStartTimeout)
	defer cancel()
	started := time.Now()
	t := &ownTarget{}
	masters, err := startOwnNodes(ctx, bin, freePort, clusterMasters, t, replicationArgs...)
	for _, m := range masters {
		if err != nil {
			break
		}
		_, port, _ := net.SplitHostPort(m.addr)
		_, err = startOwnNodes(ctx, bin, freePort, 1, t, slices.Concat(replicationArgs, []string{"--replicaof", "127.0.0.1", port})...)
	}
	if err == nil {
		err = waitFor(ctx, "the replicas acknowledge writes", func() string { return streaming(ctx, masters, 1) })
	}
	if err == nil {
		err = benchkit.NodesReady(ctx, started)
	}
	if err == nil {
		err = t.finish(addrsOf(t.servers))
	}
	var ps []*redis.Pool
	if err == nil {
		ps, err = newPools(addrsOf(masters))
	}
	if err == nil {
		t.closers = append(t.closers, func() error { closePools(ps); return nil })
		t.KeepTarget, err = benchkit.Ours(name, lockPools(ps), opts...)
	}
	if err != nil {
		return nil, errors.Join(err, t.Close())
	}
	return t, nil
}

// finish makes the raw pools of the servers at addrs, which the workload
// reads INFO through.
func (t *ownTarget) finish(addrs []string) error {
	ps, err := newPools(addrs)
	t.stats = ps
	return err
}

// startOwnNodes starts n nodes for t, with ports from pick and extra
// arguments, and adds them to t's servers, in front (the replicas, started
// after their masters, are stopped first). A start that fails, such as
// on a port taken between the pick and the bind, is tried again.
func startOwnNodes(ctx context.Context, bin string, pick func() (int, error), n int, t *ownTarget, extra ...string) ([]*redisNode, error) {
	var out []*redisNode
	for range n {
		var nd *redisNode
		var err error
		for range 3 {
			if nd, err = startNodeWith(ctx, bin, pick, extra...); err == nil || ctx.Err() != nil {
				break
			}
		}
		if err != nil {
			return out, err
		}
		out = append(out, nd)
		t.servers = append([]*redisNode{nd}, t.servers...)
	}
	return out, nil
}

// startCluster starts the nodes of a Redis Cluster of clusterMasters
// masters with replicas replicas each for t, and creates the cluster by
// hand, as redis-cli --cluster create does: master i takes an even,
// contiguous share of the slots (CLUSTER ADDSLOTSRANGE) and config epoch
// i+1 (CLUSTER SET-CONFIG-EPOCH), the first master meets every other node
// (CLUSTER MEET), and each replica, once it knows its master, replicates
// it (CLUSTER REPLICATE). It returns once every node reports
// cluster_state:ok and a slot map that covers every slot with the
// masters, and once every master streams its writes to its replicas (an
// acknowledged WAIT).
func startCluster(ctx context.Context, bin string, replicas int, t *ownTarget) (masters, reps []*redisNode, err error) {
	args := slices.Concat(clusterArgs, replicationArgs)
	if masters, err = startOwnNodes(ctx, bin, freeClusterPort, clusterMasters, t, args...); err != nil {
		return nil, nil, err
	}
	if reps, err = startOwnNodes(ctx, bin, freeClusterPort, clusterMasters*replicas, t, args...); err != nil {
		return nil, nil, err
	}
	for i, m := range masters {
		first, last := i*clusterSlots/clusterMasters, (i+1)*clusterSlots/clusterMasters-1
		if _, err := nodeDo(ctx, m.addr, "CLUSTER", "ADDSLOTSRANGE", first, last); err != nil {
			return nil, nil, fmt.Errorf("bench: CLUSTER ADDSLOTSRANGE on %s (Redis 7.0 or later): %w", m.addr, err)
		}
		if _, err := nodeDo(ctx, m.addr, "CLUSTER", "SET-CONFIG-EPOCH", i+1); err != nil {
			return nil, nil, fmt.Errorf("bench: CLUSTER SET-CONFIG-EPOCH on %s: %w", m.addr, err)
		}
	}
	meet := func(n, other *redisNode) error {
		host, port, _ := net.SplitHostPort(other.addr)
		if _, err := nodeDo(ctx, n.addr, "CLUSTER", "MEET", host, port); err != nil {
			return fmt.Errorf("bench: CLUSTER MEET %s on %s: %w", other.addr, n.addr, err)
		}
		return nil
	}
	for _, n := range slices.Concat(masters[1:], reps) {
		if err := meet(masters[0], n); err != nil {
			return nil, nil, err
		}
	}
	for k, r := range reps {
		// Met by its master, a replica knows it at the handshake, not
		// when gossip brings the news.
		if err := meet(masters[k/replicas], r); err != nil {
			return nil, nil, err
		}
	}
	if replicas > 0 {
		ids := make([]string, len(masters))
		for i, m := range masters {
			if ids[i], err = redis.String(nodeDo(ctx, m.addr, "CLUSTER", "MYID")); err != nil {
				return nil, nil, fmt.Errorf("bench: CLUSTER MYID on %s: %w", m.addr, err)
			}
		}
		// A replica refuses CLUSTER REPLICATE until gossip has told it of
		// its master: it is asked again until it replicates.
		err = waitFor(ctx, "the replicas replicate their masters", func() string {
			for k, r := range reps {
				info, err := redis.String(nodeDo(ctx, r.addr, "INFO", "replication"))
				if err != nil {
					return err.Error()
				}
				if infoValue(info, "role") == "slave" {
					continue
				}
				if _, err := nodeDo(ctx, r.addr, "CLUSTER", "REPLICATE", ids[k/replicas]); err != nil {
					return fmt.Sprintf("CLUSTER REPLICATE on %s: %v", r.addr, err)
				}
				return r.addr + " asked to replicate"
			}
			return ""
		})
		if err != nil {
			return nil, nil, err
		}
	}
	all := slices.Concat(masters, reps)
	err = waitFor(ctx, "the Redis Cluster is ok", func() string { return clusterOK(ctx, all, addrsOf(masters)) })
	if err == nil && replicas > 0 {
		err = waitFor(ctx, "the replicas acknowledge writes", func() string { return streaming(ctx, masters, replicas) })
	}
	return masters, reps, err
}

// clusterOK checks that every node reports cluster_state:ok and a slot map
// that covers every slot, each range owned by one of masters, and returns
// what is missing ("" when nothing is). The replicas the slot maps list
// are not checked: a node hears of a replica's new role from the replica
// itself, which pings each node at least every half node timeout (7.5 s),
// and the locks need no more than the replicas' streams (streaming).
func clusterOK(ctx context.Context, nodes []*redisNode, masters []string) string {
	for _, n := range nodes {
		info, err := redis.String(nodeDo(ctx, n.addr, "CLUSTER", "INFO"))
		if err != nil {
			return fmt.Sprintf("CLUSTER INFO on %s: %v", n.addr, err)
		}
		if s := infoValue(info, "cluster_state"); s != "ok" {
			return fmt.Sprintf("%s: cluster_state:%s", n.addr, s)
		}
		entries, err := redis.Values(nodeDo(ctx, n.addr, "CLUSTER", "SLOTS"))
		if err != nil {
			return fmt.Sprintf("CLUSTER SLOTS on %s: %v", n.addr, err)
		}
		covered := 0
		var owners []string
		for _, e := range entries {
			f, _ := redis.Values(e, nil)
			if len(f) < 3 {
				return fmt.Sprintf("%s: CLUSTER SLOTS entry %v", n.addr, e)
			}
			first, _ := redis.Int(f[0], nil)
			last, _ := redis.Int(f[1], nil)
			m, _ := redis.Values(f[2], nil)
			if len(m) < 2 {
				return fmt.Sprintf("%s: CLUSTER SLOTS entry %v", n.addr, e)
			}
			ip, _ := redis.String(m[0], nil)
			port, _ := redis.Int(m[1], nil)
			owner := net.JoinHostPort(ip, strconv.Itoa(port))
			if !slices.Contains(masters, owner) {
				return fmt.Sprintf("%s: slots %d-%d owned by %s, not a master", n.addr, first, last, owner)
			}
			if !slices.Contains(owners, owner) {
				owners = append(owners, owner)
			}
			covered += last - first + 1
		}
		if covered != clusterSlots || len(owners) != len(masters) {
			return fmt.Sprintf("%s: %d slots covered by %d masters", n.addr, covered, len(owners))
		}
	}
	return ""
}

// streaming checks that every master reports replicas replicas online and
// that they acknowledge a write (WAIT), and returns what is missing. A
// replica reports its link up before its master streams to it (until its
// first REPLCONF ACK, sent once a second); the acknowledged write proves
// the stream. The servers are empty, so the write is a FLUSHALL, which
// Redis always propagates.
func streaming(ctx context.Context, masters []*redisNode, replicas int) string {
	for _, m := range masters {
		info, err := redis.String(nodeDo(ctx, m.addr, "INFO", "replication"))
		if err != nil {
			return fmt.Sprintf("INFO replication on %s: %v", m.addr, err)
		}
		if on := strings.Count(info, ",state=online,"); on != replicas {
			return fmt.Sprintf("master %s has %d replicas online, want %d", m.addr, on, replicas)
		}
		if _, err := nodeDo(ctx, m.addr, "FLUSHALL"); err != nil {
			return fmt.Sprintf("FLUSHALL on %s: %v", m.addr, err)
		}
		n, err := redis.Int(nodeDo(ctx, m.addr, "WAIT", replicas, 1000))
		if err != nil || n < replicas {
			return fmt.Sprintf("WAIT on %s: %d of %d replicas acknowledged (%v)", m.addr, n, replicas, err)
		}
	}
	return ""
}

// nodeDo runs one command on the server at addr on a connection of its
// own.
func nodeDo(ctx context.Context, addr, cmd string, args ...any) (any, error) {
	c, err := redis.DialContext(ctx, "tcp", addr, redis.DialConnectTimeout(time.Second),
		redis.DialReadTimeout(5*time.Second), redis.DialWriteTimeout(5*time.Second))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return redis.DoContext(c, ctx, cmd, args...)
}

// waitFor calls cond every 50 ms until it reports nothing missing ("") or
// ctx ends, with an error that says what, and what was last missing.
func waitFor(ctx context.Context, what string, cond func() string) error {
	for {
		missing := cond()
		if missing == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: waiting until %s: %s: %w", what, missing, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// infoValue returns the value of field in an INFO or CLUSTER INFO reply.
func infoValue(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// freeClusterPort is freePort for a cluster node, whose cluster bus
// listens 10000 higher: that port must be free too, and at most 65535.
func freeClusterPort() (int, error) {
	for range 100 {
		p, err := freePort()
		if err != nil {
			return 0, err
		}
		if p+10000 > 65535 {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+10000)))
		if err != nil {
			continue
		}
		l.Close()
		return p, nil
	}
	return 0, errors.New("bench: no free port whose cluster bus port is free as well")
}
