package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// ClusterSlots is the number of hash slots of a Redis Cluster.
const ClusterSlots = 16384

// RedisClusterNodeTimeout is the cluster-node-timeout StartRedisCluster
// gives every node: how long a node may be unreachable before the others
// flag it as failing, and so about how long a failover takes (the
// timeout, then an election delay of 0.5 to 1 s, plus 1 s per rank for
// a replica that is not the most up to date; 3.6 to 4.4 s from the
// SIGKILL to an agreed cluster in this package's tests).
//
// 2 s, the long end of what tests use: the tests of this repository run
// on two shared cores next to race-detector builds, and a live master
// that fails to answer pings for a whole timeout (a stall of the
// machine) is failed over, which a test did not ask for. Every failover
// costs about a second more than with 1 s. A test can pass its own
// --cluster-node-timeout among the extra arguments.
const RedisClusterNodeTimeout = 2000 * time.Millisecond

// clusterWait bounds every wait of the harness for the cluster: its
// creation, a failover, a slot migration. Each takes a few seconds when
// things go well; the bound is for a loaded machine.
const clusterWait = 60 * time.Second

// clusterArgs are the arguments of every cluster node, before the test's
// extra ones (which win, being later). Each node has its own data
// directory, so the same relative cluster-config-file is one file per
// node. repl-diskless-sync-delay 0: Redis 7.0 otherwise waits 5 s for more
// replicas before each full synchronisation. Replica migration is off,
// so that a replica stays with the master it was created for
// (Replicas[i]) unless a failover promotes it.
func clusterArgs() []string {
	return []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(RedisClusterNodeTimeout.Milliseconds(), 10),
		"--cluster-allow-replica-migration", "no",
		"--repl-diskless-sync-delay", "0",
	}
}

// RedisCluster is a Redis Cluster of redis-server processes started by
// StartRedisCluster (not to be confused with Cluster, a set of
// independent nodes).
type RedisCluster struct {
	// Masters are the masters at creation, in the order of their first
	// slot. A failover does not change them: KillMaster(i) follows
	// Masters[i]'s first slot to whoever owns it now.
	Masters []*Node
	// Replicas[i] are the replicas of Masters[i] at creation.
	Replicas [][]*Node

	nodes     []*Node          // every process, in the order of creation
	byPort    map[int]*Node    // nodes by their port
	ids       map[*Node]string // cluster node ids (CLUSTER MYID)
	firstSlot []int            // firstSlot[i] is Masters[i]'s first slot at creation

	mu     sync.Mutex
	paused map[*Node]*Node // replicas PauseReplication froze, to their master
}

// StartRedisCluster starts masters*(1+replicasEach) redis-server processes
// with --cluster-enabled yes (each with its own cluster-config-file in its
// data directory and a cluster-node-timeout of RedisClusterNodeTimeout),
// creates the cluster, and returns once the cluster is up:
// cluster_state:ok on every node, every node's CLUSTER SLOTS covers all
// 16384 slots with the same masters, and every replica reports
// master_link_status:up, its master reports it online, and it has
// acknowledged a write (WAIT), so that its master streams to it. Every
// process is stopped at tb.Cleanup. The test fails (tb.Fatalf) when the
// cluster cannot be created or does not come up in time.
//
// With 3 masters or more, the cluster is created with redis-cli --cluster
// create ... --cluster-replicas replicasEach --cluster-yes (and a failure
// shows redis-cli's output). redis-cli refuses fewer than 3 masters, so a
// cluster of 1 or 2 masters is created by hand, the way redis-cli does it
// but without replicas (replicasEach must be 0 then): each node takes an
// even, contiguous share of the slots in order (CLUSTER ADDSLOTSRANGE;
// with 2 masters, 0-8191 and 8192-16383) and a config epoch of its own
// (CLUSTER SET-CONFIG-EPOCH), then the first node meets the others
// (CLUSTER MEET). Such a cluster has no failover: KillMaster refuses it,
// having no replica to promote.
//
// The nodes are durable like those of Start (an AOF fsynced at every
// write); extraArgs are given to every node after the harness's own.
// REDIS_CLI names the redis-cli to run; by default it is the one next to
// REDIS_SERVER, when that names a path, or redis-cli on the PATH.
func StartRedisCluster(tb testing.TB, masters, replicasEach int, extraArgs ...string) *RedisCluster {
	tb.Helper()
	if masters < 1 || replicasEach < 0 {
		tb.Fatalf("redistest: a Redis Cluster needs at least 1 master and no negative replica count; asked for %d masters with %d replicas each", masters, replicasEach)
	}
	byHand := masters < 3
	if byHand && replicasEach > 0 {
		tb.Fatalf("redistest: a Redis Cluster of fewer than 3 masters is created without redis-cli and cannot have replicas; asked for %d masters with %d replicas each (use at least 3 masters, or 0 replicas)", masters, replicasEach)
	}
	if !Available() {
		tb.Fatalf("redistest: %s not found; install it with: apt-get install -y redis-server", Binary())
	}
	cli := cliBinary()
	if !byHand {
		if _, err := exec.LookPath(cli); err != nil {
			tb.Fatalf("redistest: %s not found; install it with: apt-get install -y redis-tools", cli)
		}
	}
	total := masters * (1 + replicasEach)
	dirs := make([]string, total)
	for i := range dirs {
		dirs[i] = dataDir(tb) // before the cleanup below, so removed after the nodes stop
	}
	c := &RedisCluster{byPort: map[int]*Node{}, ids: map[*Node]string{}, paused: map[*Node]*Node{}}
	tb.Cleanup(c.stop) // before the first start, so that a failed one leaks no node
	args := append(clusterArgs(), extraArgs...)
	for _, dir := range dirs {
		n := &Node{tb: tb, Args: args, dir: dir}
		c.nodes = append(c.nodes, n)
		startClusterNode(tb, n)
		c.byPort[n.Port] = n
	}

	var created string // how the cluster was created, for a failure message
	if byHand {
		c.createByHand(tb)
		created = "created by hand (CLUSTER ADDSLOTSRANGE, SET-CONFIG-EPOCH, MEET)"
	} else {
		cmd := []string{"--cluster", "create"}
		for _, n := range c.nodes {
			cmd = append(cmd, n.Addr())
		}
		cmd = append(cmd, "--cluster-replicas", strconv.Itoa(replicasEach), "--cluster-yes")
		ctx, cancel := context.WithTimeout(context.Background(), clusterWait)
		out, err := exec.CommandContext(ctx, cli, cmd...).CombinedOutput()
		cancel()
		if err != nil {
			tb.Fatalf("redistest: %s %s: %v; its output:\n%s", cli, strings.Join(cmd, " "), err, out)
		}
		created = "redis-cli's output:\n" + string(out)
	}

	var last string
	if !waitFor(clusterWait, func() bool { last = c.created(masters, replicasEach); return last == "" }) {
		tb.Fatalf("redistest: the Redis Cluster did not come up within %v: %s\n%s\n%s",
			clusterWait, last, c.describe(), created)
	}
	if replicasEach > 0 {
		if !waitFor(clusterWait, func() bool { last = c.streaming(replicasEach); return last == "" }) {
			tb.Fatalf("redistest: the replicas of the new Redis Cluster do not acknowledge writes within %v: %s\n%s",
				clusterWait, last, c.describe())
		}
	}
	return c
}

// createByHand makes a cluster of c.nodes, every one a master, as redis-cli
// --cluster create does without replicas (it refuses fewer than 3
// masters): node i takes slots i*16384/n to (i+1)*16384/n-1 (CLUSTER
// ADDSLOTSRANGE) and config epoch i+1 (CLUSTER SET-CONFIG-EPOCH, which a
// node accepts only while it knows no other node; distinct epochs spare
// the nodes resolving a collision), then the first node meets every
// other (CLUSTER MEET), and gossip does the rest. The caller waits for
// the cluster to agree.
func (c *RedisCluster) createByHand(tb testing.TB) {
	tb.Helper()
	n := len(c.nodes)
	for i, node := range c.nodes {
		first, last := i*ClusterSlots/n, (i+1)*ClusterSlots/n-1
		mustDo(tb, node, "CLUSTER", "ADDSLOTSRANGE", first, last)
		mustDo(tb, node, "CLUSTER", "SET-CONFIG-EPOCH", i+1)
	}
	for _, node := range c.nodes[1:] {
		mustDo(tb, c.nodes[0], "CLUSTER", "MEET", "127.0.0.1", node.Port)
	}
}

// streaming checks that every master streams its writes to each of its
// replicas, and returns what is missing ("" when nothing is). After a
// diskless full synchronisation (the default of Redis 7.0) a replica
// reports its link up and its master reports it online, but the master
// streams nothing to it until the replica's first REPLCONF ACK, sent once
// a second: a write made before then would reach the replica late, and
// PauseReplication's filler would not even reach the kernel. A write
// that WAIT sees acknowledged by every replica proves the stream; the
// new cluster is empty, so the write is a FLUSHALL, which Redis always
// propagates.
func (c *RedisCluster) streaming(replicasEach int) string {
	for _, m := range c.Masters {
		conn, err := redis.Dial("tcp", m.Addr(), redis.DialConnectTimeout(time.Second), redis.DialReadTimeout(5*time.Second))
		if err != nil {
			return fmt.Sprintf("dial %s: %v", m.Addr(), err)
		}
		_, err = conn.Do("FLUSHALL")
		var n int
		if err == nil {
			n, err = redis.Int(conn.Do("WAIT", replicasEach, 1500))
		}
		conn.Close()
		if err != nil {
			return fmt.Sprintf("FLUSHALL and WAIT on %s: %v", m.Addr(), err)
		}
		if n < replicasEach {
			return fmt.Sprintf("%d of %d replicas of %s acknowledged a write", n, replicasEach, m.Addr())
		}
	}
	return ""
}

// startClusterNode starts n on a free port whose cluster bus port
// (port+10000) is free too. redisproc picks the port; when the bus port
// is taken redis-server fails to bind it with "Address already in use",
// which redisproc takes for a lost port and picks another. A port above
// 55535, whose bus port would be above 65535, makes redis-server exit
// with "port number too high": here the start is tried again, on a new
// port. (Linux hands out the lower half of ip_local_port_range first,
// 32768-46879 by default, so that takes a crowded machine.)
//
// The bus port is not among the ports redisproc remembers having handed
// out: a node of this binary that was killed and waits to restart on its
// port can find it taken by a new cluster node's bus, and a killed cluster
// node can find its bus port taken by a new node. Both need a kill and a
// start elsewhere in the same binary in between, and the kernel to offer
// exactly that port.
func startClusterNode(tb testing.TB, n *Node) {
	tb.Helper()
	const attempts = 10
	var err error
	for range attempts {
		n.Port = 0
		if err = n.start(); err == nil {
			return
		}
	}
	tb.Fatalf("redistest: start a cluster node (%d attempts), the last: %v", attempts, err)
}

// cliBinary is the redis-cli executable: REDIS_CLI, else the one next to
// REDIS_SERVER when that names a path and has one, else redis-cli.
func cliBinary() string {
	if b := os.Getenv("REDIS_CLI"); b != "" {
		return b
	}
	if dir := filepath.Dir(Binary()); dir != "." {
		if p := filepath.Join(dir, "redis-cli"); fileExists(p) {
			return p
		}
	}
	return "redis-cli"
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// created checks that the new cluster is up and, once it is, fills in
// Masters, Replicas, the node ids and first slots. It returns what is
// still missing, "" when nothing is.
func (c *RedisCluster) created(masters, replicasEach int) string {
	m, why := c.agreed(c.nodes)
	if why != "" {
		return why
	}
	owners := m.masters()
	if len(owners) != masters {
		return fmt.Sprintf("%d masters own slots, want %d", len(owners), masters)
	}
	var ms []*Node
	for _, port := range owners {
		n := c.byPort[port]
		if n == nil {
			return fmt.Sprintf("slots owned by port %d, not a node of this cluster", port)
		}
		ms = append(ms, n)
	}
	reps := make([][]*Node, masters)
	ids := map[*Node]string{}
	for _, n := range c.nodes {
		id, err := redis.String(query(n, "CLUSTER", "MYID"))
		if err != nil {
			return fmt.Sprintf("CLUSTER MYID on %s: %v", n.Addr(), err)
		}
		ids[n] = id
		info, err := redis.String(query(n, "INFO", "replication"))
		if err != nil {
			return fmt.Sprintf("INFO replication on %s: %v", n.Addr(), err)
		}
		i := slices.Index(ms, n)
		role := infoField(info, "role")
		switch {
		case i >= 0 && role != "master":
			return fmt.Sprintf("%s owns slots but has role %s", n.Addr(), role)
		case i >= 0:
			if on := onlineReplicas(info); on != replicasEach {
				return fmt.Sprintf("master %s streams to %d replicas, want %d", n.Addr(), on, replicasEach)
			}
			continue
		case role != "slave":
			return fmt.Sprintf("%s owns no slot but has role %s", n.Addr(), role)
		case infoField(info, "master_link_status") != "up":
			return fmt.Sprintf("replica %s: master_link_status:%s", n.Addr(), infoField(info, "master_link_status"))
		}
		port, _ := strconv.Atoi(infoField(info, "master_port"))
		j := slices.IndexFunc(ms, func(m *Node) bool { return m.Port == port })
		if j < 0 {
			return fmt.Sprintf("replica %s replicates port %d, not a master", n.Addr(), port)
		}
		reps[j] = append(reps[j], n)
	}
	for i, r := range reps {
		if len(r) != replicasEach {
			return fmt.Sprintf("master %s has %d replicas, want %d", ms[i].Addr(), len(r), replicasEach)
		}
	}
	c.Masters, c.Replicas, c.ids = ms, reps, ids
	c.firstSlot = make([]int, masters)
	for i, n := range ms {
		c.firstSlot[i] = m.firstSlotOf(n.Port)
	}
	return ""
}

// Seeds returns host:port of every master at creation.
func (c *RedisCluster) Seeds() []string {
	out := make([]string, len(c.Masters))
	for i, n := range c.Masters {
		out[i] = n.Addr()
	}
	return out
}

// Nodes returns every process of the cluster, masters and replicas, killed
// or not, in the order they were started.
func (c *RedisCluster) Nodes() []*Node { return slices.Clone(c.nodes) }

// ID returns the node's cluster id (CLUSTER MYID at creation), which it
// keeps across restarts in its cluster-config-file; "" for a node of
// another cluster.
func (c *RedisCluster) ID(n *Node) string { return c.ids[n] }

// MasterOf returns the node that owns slot now according to CLUSTER SLOTS of
// the first live node that answers, nil when none answers or none owns it.
func (c *RedisCluster) MasterOf(slot int) *Node {
	for _, n := range c.live() {
		m, err := slotMapOf(n)
		if err != nil {
			continue
		}
		return c.byPort[m.owner(slot)]
	}
	return nil
}

// WaitOK waits until every live node (running, and not frozen by
// PauseReplication) reports cluster_state:ok and the same CLUSTER SLOTS,
// covering all 16384 slots, and fails the test when that takes too long.
func (c *RedisCluster) WaitOK(tb testing.TB) {
	tb.Helper()
	var last string
	if !waitFor(clusterWait, func() bool { _, last = c.agreed(c.live()); return last == "" }) {
		tb.Fatalf("redistest: the Redis Cluster is not ok within %v: %s\n%s", clusterWait, last, c.describe())
	}
}

// MoveSlot migrates slot and its keys to the master to, as redis-cli
// --cluster reshard does for each slot: CLUSTER SETSLOT slot IMPORTING on
// the target, MIGRATING on the source, CLUSTER GETKEYSINSLOT and MIGRATE
// ... KEYS in batches of 100 keys, then CLUSTER SETSLOT slot NODE
// <target id> on the target, the source and every other live master. It
// returns once every live node's CLUSTER SLOTS agrees that to owns slot.
// Keys keep their TTL (MIGRATE does). Moving a slot to its owner does
// nothing.
func (c *RedisCluster) MoveSlot(tb testing.TB, slot int, to *Node) {
	tb.Helper()
	if slot < 0 || slot >= ClusterSlots {
		tb.Fatalf("redistest: MoveSlot: slot %d out of range", slot)
	}
	from := c.MasterOf(slot)
	if from == nil {
		tb.Fatalf("redistest: MoveSlot: no live node names the owner of slot %d\n%s", slot, c.describe())
	}
	if from == to {
		return
	}
	toID, fromID := c.ID(to), c.ID(from)
	if toID == "" {
		tb.Fatalf("redistest: MoveSlot: %s is not a node of this Redis Cluster", to.Addr())
	}
	mustDo(tb, to, "CLUSTER", "SETSLOT", slot, "IMPORTING", fromID)
	mustDo(tb, from, "CLUSTER", "SETSLOT", slot, "MIGRATING", toID)
	for {
		keys, err := redis.Strings(mustDo(tb, from, "CLUSTER", "GETKEYSINSLOT", slot, 100), nil)
		if err != nil {
			tb.Fatalf("redistest: CLUSTER GETKEYSINSLOT on %s: %v", from.Addr(), err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"127.0.0.1", to.Port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		mustDo(tb, from, "MIGRATE", args...)
	}
	// The target first: it bumps its config epoch, so that its claim
	// wins everywhere, and tells its replicas.
	mustDo(tb, to, "CLUSTER", "SETSLOT", slot, "NODE", toID)
	mustDo(tb, from, "CLUSTER", "SETSLOT", slot, "NODE", toID)
	for _, n := range c.live() {
		if n == to || n == from {
			continue
		}
		info, err := redis.String(query(n, "INFO", "replication"))
		if err != nil || infoField(info, "role") != "master" {
			continue
		}
		mustDo(tb, n, "CLUSTER", "SETSLOT", slot, "NODE", toID)
	}
	var last string
	ok := waitFor(clusterWait, func() bool {
		var m SlotMap
		if m, last = c.agreed(c.live()); last != "" {
			return false
		}
		if owner := m.owner(slot); owner != to.Port {
			last = fmt.Sprintf("slot %d is owned by port %d, want %d", slot, owner, to.Port)
			return false
		}
		return true
	})
	if !ok {
		tb.Fatalf("redistest: MoveSlot %d to %s: the nodes do not agree within %v: %s\n%s", slot, to.Addr(), clusterWait, last, c.describe())
	}
}

// KillMaster SIGKILLs the master that now owns Masters[i]'s first slot at
// creation (Masters[i] itself, or the replica a failover promoted in its
// place), continues every replica of it that PauseReplication froze, and
// waits until a replica is promoted: it has role:master and owns the slot
// on every live node, and every live node reports cluster_state:ok. It
// returns the new master. The killed node stays in the cluster, failed;
// Start brings it back as a replica of the new master.
func (c *RedisCluster) KillMaster(tb testing.TB, i int) *Node {
	tb.Helper()
	if i < 0 || i >= len(c.Masters) {
		tb.Fatalf("redistest: KillMaster(%d) of a cluster of %d masters", i, len(c.Masters))
	}
	slot := c.firstSlot[i]
	old := c.MasterOf(slot)
	if old == nil {
		tb.Fatalf("redistest: KillMaster(%d): no live node names the owner of slot %d\n%s", i, slot, c.describe())
	}
	info, err := redis.String(query(old, "INFO", "replication"))
	if err != nil {
		tb.Fatalf("redistest: KillMaster(%d): INFO replication on %s: %v", i, old.Addr(), err)
	}
	if infoField(info, "connected_slaves") == "0" {
		tb.Fatalf("redistest: KillMaster(%d): %s has no replica to promote", i, old.Addr())
	}
	old.Kill()
	c.mu.Lock()
	var frozen []*Node
	for r, m := range c.paused {
		if m == old {
			frozen = append(frozen, r)
			delete(c.paused, r)
		}
	}
	c.mu.Unlock()
	for _, r := range frozen {
		signalNode(tb, r, syscall.SIGCONT)
	}
	var (
		last  string
		owner *Node
	)
	ok := waitFor(clusterWait, func() bool {
		var m SlotMap
		if m, last = c.agreed(c.live()); last != "" {
			return false
		}
		owner = c.byPort[m.owner(slot)]
		if owner == nil || owner == old {
			last = fmt.Sprintf("slot %d is still owned by port %d", slot, m.owner(slot))
			return false
		}
		info, err := redis.String(query(owner, "INFO", "replication"))
		if err != nil || infoField(info, "role") != "master" {
			last = fmt.Sprintf("%s owns slot %d but is not a master yet (%v)", owner.Addr(), slot, err)
			return false
		}
		return true
	})
	if !ok {
		tb.Fatalf("redistest: KillMaster(%d): no replica of %s was promoted within %v: %s\n%s", i, old.Addr(), clusterWait, last, c.describe())
	}
	return owner
}

// PauseReplication holds back replication from its master to replica,
// while the master goes on answering clients, until resume is called or
// KillMaster kills that master. Writes the master acknowledges during the
// pause do not reach the replica before then (WAIT counts it out), and a
// KillMaster of the master during the pause promotes a replica that lacks
// them, when replica is the master's only one (another replica would
// receive them, win the election as the most up to date, and pass them
// on). Writes acknowledged before PauseReplication (with WAIT) are kept.
//
// The mechanism: replica is frozen with SIGSTOP, then the master is given
// one write (a filler key, deleted at once) larger than the most the
// kernel can hold in flight between them: the replica socket's receive
// buffer (at most tcp_rmem's maximum) and the master socket's send buffer
// (at most tcp_wmem's maximum), plus a megabyte. Every later byte of the
// replication stream then waits in the master's own memory, and dies with
// it at a SIGKILL. SIGSTOP alone is not enough: a stopped process's kernel
// still accepts data on its sockets, so the replica would read the pause's
// writes from its receive buffer when continued, even after its master
// died. KillMaster kills the master first, then continues the replica,
// which reads what the kernel held (filler), finds its master gone, and is
// elected in its place.
//
// While frozen, the replica is flagged failing by the other nodes; WaitOK
// leaves it out. resume continues it, and it catches up from its master
// (by a full resynchronisation if the pause outlasted the master's
// repl-timeout, 60 s, which drops the link); resume is also called at
// cleanup, and does nothing after KillMaster continued the replica.
func (c *RedisCluster) PauseReplication(tb testing.TB, replica *Node) (resume func()) {
	tb.Helper()
	info, err := redis.String(query(replica, "INFO", "replication"))
	if err != nil {
		tb.Fatalf("redistest: PauseReplication: INFO replication on %s: %v", replica.Addr(), err)
	}
	port, _ := strconv.Atoi(infoField(info, "master_port"))
	master := c.byPort[port]
	if infoField(info, "role") != "slave" || master == nil || infoField(info, "master_link_status") != "up" {
		tb.Fatalf("redistest: PauseReplication: %s is not a replica linked to a master of this cluster:\n%s", replica.Addr(), info)
	}
	owned, err := slotMapOf(master)
	if err != nil {
		tb.Fatalf("redistest: PauseReplication: CLUSTER SLOTS on %s: %v", master.Addr(), err)
	}
	filler := ""
	for k := 0; filler == ""; k++ {
		key := fmt.Sprintf("redistest:replication-filler:%d", k)
		slot, err := redis.Int(query(master, "CLUSTER", "KEYSLOT", key))
		if err != nil {
			tb.Fatalf("redistest: PauseReplication: CLUSTER KEYSLOT on %s: %v", master.Addr(), err)
		}
		if owned.owner(slot) == master.Port {
			filler = key
		}
		if k == 10000 {
			tb.Fatalf("redistest: PauseReplication: %s owns no slot", master.Addr())
		}
	}
	size := InFlightBound()

	c.mu.Lock()
	if _, ok := c.paused[replica]; ok {
		c.mu.Unlock()
		tb.Fatalf("redistest: PauseReplication: %s is already paused", replica.Addr())
	}
	c.paused[replica] = master
	c.mu.Unlock()
	signalNode(tb, replica, syscall.SIGSTOP)
	mustDo(tb, master, "SET", filler, make([]byte, size))
	mustDo(tb, master, "DEL", filler)

	resume = sync.OnceFunc(func() {
		c.mu.Lock()
		_, still := c.paused[replica]
		delete(c.paused, replica)
		c.mu.Unlock()
		if still && replica.Running() {
			signalNode(tb, replica, syscall.SIGCONT)
		}
	})
	tb.Cleanup(resume)
	return resume
}

// live returns the nodes that are running and not frozen by
// PauseReplication.
func (c *RedisCluster) live() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Node
	for _, n := range c.nodes {
		if _, frozen := c.paused[n]; !frozen && n.Running() {
			out = append(out, n)
		}
	}
	return out
}

// agreed checks that every node of nodes reports cluster_state:ok and the
// same masters in CLUSTER SLOTS, covering every slot. It returns the slot
// map, or why not.
func (c *RedisCluster) agreed(nodes []*Node) (SlotMap, string) {
	if len(nodes) == 0 {
		return nil, "no live node"
	}
	var first SlotMap
	for _, n := range nodes {
		info, err := redis.String(query(n, "CLUSTER", "INFO"))
		if err != nil {
			return nil, fmt.Sprintf("CLUSTER INFO on %s: %v", n.Addr(), err)
		}
		if st := infoField(info, "cluster_state"); st != "ok" {
			return nil, fmt.Sprintf("%s: cluster_state:%s", n.Addr(), st)
		}
		m, err := slotMapOf(n)
		if err != nil {
			return nil, fmt.Sprintf("CLUSTER SLOTS on %s: %v", n.Addr(), err)
		}
		if !m.Complete() {
			return nil, fmt.Sprintf("%s: CLUSTER SLOTS covers not every slot: %v", n.Addr(), m)
		}
		if first == nil {
			first = m
		} else if !slices.Equal(first, m) {
			return nil, fmt.Sprintf("%s and %s disagree: %v against %v", nodes[0].Addr(), n.Addr(), first, m)
		}
	}
	return first, ""
}

// describe returns every running node's view (CLUSTER NODES), for a
// failure message.
func (c *RedisCluster) describe() string {
	var b strings.Builder
	for _, n := range c.nodes {
		if !n.Running() {
			fmt.Fprintf(&b, "%s: not running\n", n.Addr())
			continue
		}
		v, err := redis.String(query(n, "CLUSTER", "NODES"))
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", n.Addr(), err)
			continue
		}
		fmt.Fprintf(&b, "CLUSTER NODES on %s:\n%s", n.Addr(), v)
	}
	return b.String()
}

func (c *RedisCluster) stop() {
	for _, n := range c.nodes {
		n.shutdown()
	}
}

// query runs one command on n on a new connection, with short timeouts,
// and returns its reply.
func query(n *Node, cmd string, args ...any) (any, error) {
	conn, err := redis.Dial("tcp", n.Addr(), redis.DialConnectTimeout(time.Second),
		redis.DialReadTimeout(2*time.Second), redis.DialWriteTimeout(2*time.Second))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.Do(cmd, args...)
}

// mustDo runs one command on n and fails tb on an error or an error reply.
// Its timeouts allow a slow write (PauseReplication's filler, a MIGRATE).
func mustDo(tb testing.TB, n *Node, cmd string, args ...any) any {
	tb.Helper()
	conn, err := redis.Dial("tcp", n.Addr(), redis.DialConnectTimeout(2*time.Second),
		redis.DialReadTimeout(10*time.Second), redis.DialWriteTimeout(10*time.Second))
	if err != nil {
		tb.Fatalf("redistest: dial %s: %v", n.Addr(), err)
	}
	defer conn.Close()
	v, err := conn.Do(cmd, args...)
	if err != nil {
		tb.Fatalf("redistest: %s on %s: %v", cmd, n.Addr(), err)
	}
	return v
}

// signalNode sends sig to n's process and fails tb when it is not running.
func signalNode(tb testing.TB, n *Node, sig syscall.Signal) {
	tb.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		tb.Fatalf("redistest: node %s is not running", n.Addr())
	}
	if err := n.proc.Signal(sig); err != nil {
		tb.Fatalf("redistest: signal %v to %s: %v", sig, n.Addr(), err)
	}
}

// onlineReplicas counts the replicas a master's INFO replication reports
// online (see streaming for why that is not enough).
func onlineReplicas(info string) int {
	n := 0
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "slave") && strings.Contains(line, ",state=online,") {
			n++
		}
	}
	return n
}

// infoField returns the value of field in an INFO or CLUSTER INFO reply.
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// waitFor polls cond every 50 ms until it holds or timeout passes, and
// reports whether it held.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if !time.Now().After(deadline) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		return false
	}
}
