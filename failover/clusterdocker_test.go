package failover

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// The Docker side of TestClusterFailover (cluster_test.go): a Redis Cluster
// of 3 masters and 3 replicas, one container each, from the image
// redlocktest.BuildLocalImage makes of the local redis-server (FROM scratch:
// no shell, no redis-cli, so the cluster is made by commands). It plays
// the part redistest.StartRedisCluster plays for local processes, with the
// same node settings and the same ways to kill a master and to hold back
// a replica.

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = redistest.ClusterSlots

// clusterWait bounds each wait for the cluster (its creation, a
// failover): a few seconds when things go well, the bound is for a loaded
// machine.
const clusterWait = 60 * time.Second

// The labels redlocktest puts on its containers and networks
// (redlocktest/docker.go): the Docker backend's housekeeping removes those
// of a test binary that died, these included.
const (
	labelOwner = "redlocktest"
	labelPID   = "redlocktest.pid"
	labelHost  = "redlocktest.host"
)

// clusterServerArgs are the arguments of every node of the Docker cluster,
// those of redistest.StartRedisCluster's nodes: durable (an AOF fsynced at
// every write, on a tmpfs here, so that the node guard lets a fresh node
// vote at once), a cluster-node-timeout of 2 s, no replica migration (a
// replica stays with the master it was made for unless a failover promotes
// it), and no 5 s wait before a diskless full synchronisation.
func clusterServerArgs() []string {
	return []string{
		"redis-server", "--port", "6379", "--dir", "/data",
		"--save", "", "--appendonly", "yes", "--appendfsync", "always",
		"--protected-mode", "no", "--loglevel", "warning",
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(redistest.RedisClusterNodeTimeout.Milliseconds(), 10),
		"--cluster-allow-replica-migration", "no",
		"--repl-diskless-sync-delay", "0",
	}
}

// dockerCluster is a Redis Cluster of containers on a network of its own.
//
// The test process talks to each node at its address on that network
// (ip:6379), and each node announces that address (cluster-announce-ip),
// so that CLUSTER SLOTS names addresses that the nodes and this process
// reach alike. That needs a host that routes to Docker's bridge networks:
// Linux with a local engine does; Docker Desktop and remote engines do
// not, and startDockerCluster says so (errUnroutable). Publishing ports
// would not do instead: a node can announce only one address, and the
// host's published port is not one the other containers reach as such.
type dockerCluster struct {
	pool    *dockertest.Pool
	network *dockertest.Network
	all     []*dockerNode // in the order of creation: masters, then replicas
	// masters[i] owns the i-th third of the slots at creation, replicas[i]
	// replicates it.
	masters, replicas []*dockerNode
	byAddr            map[string]*dockerNode

	mu     sync.Mutex
	paused map[*dockerNode]*dockerNode // replicas pauseReplication froze, to their master
}

// dockerNode is one container of the cluster.
type dockerNode struct {
	res    *dockertest.Resource
	addr   string // ip:6379 on the cluster's network
	id     string // CLUSTER MYID
	killed bool   // guarded by dockerCluster.mu
}

// errUnroutable: this host cannot reach the containers at their addresses
// on the cluster's network.
var errUnroutable = errors.New("this host does not reach the containers at their addresses on a Docker network")

// dockerPing connects to the local Docker engine and checks that it
// answers.
func dockerPing() (*dockertest.Pool, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := pool.Client.PingWithContext(ctx); err != nil {
		closeIdle(pool)
		return nil, fmt.Errorf("no Docker engine answers: %w", err)
	}
	return pool, nil
}

// closeIdle drops the Docker client's idle HTTP connections, whose
// goroutines would outlive the test (goleak).
func closeIdle(pool *dockertest.Pool) {
	if pool.Client.HTTPClient != nil {
		pool.Client.HTTPClient.CloseIdleConnections()
	}
}

// startDockerCluster starts the 6 containers from image, makes the cluster
// and returns once it is up, as redistest.StartRedisCluster does: every
// node reports cluster_state:ok and the same CLUSTER SLOTS, every replica
// its link up, and every master has seen its replica acknowledge a write
// (WAIT). It owns pool from then on. Everything is removed at cleanup.
func startDockerCluster(t *testing.T, pool *dockertest.Pool, image string) (*dockerCluster, error) {
	t.Helper()
	id := func() string {
		var b [4]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	host, _ := os.Hostname()
	labels := map[string]string{labelOwner: "1", labelPID: strconv.Itoa(os.Getpid()), labelHost: host}
	network, err := pool.CreateNetwork("redlocktest-cluster-"+id, func(o *dc.CreateNetworkOptions) { o.Labels = labels })
	if err != nil {
		closeIdle(pool)
		return nil, fmt.Errorf("create network: %w", err)
	}
	c := &dockerCluster{pool: pool, network: network, byAddr: map[string]*dockerNode{}, paused: map[*dockerNode]*dockerNode{}}
	t.Cleanup(func() { c.close(t) })
	repo, tag, _ := strings.Cut(image, ":")
	for i := range 6 {
		res, err := pool.RunWithOptions(&dockertest.RunOptions{
			Name:       fmt.Sprintf("redlocktest-cluster-%s-%d", id, i),
			Hostname:   fmt.Sprintf("node%d", i),
			Repository: repo,
			Tag:        tag,
			Cmd:        clusterServerArgs(),
			Networks:   []*dockertest.Network{network},
			Labels:     labels,
		}, func(hc *dc.HostConfig) {
			hc.AutoRemove = false
			hc.RestartPolicy = dc.RestartPolicy{Name: "no"}
			hc.Tmpfs = map[string]string{"/data": ""} // the fsyncs of appendfsync always cost nothing
		})
		if err != nil {
			return nil, fmt.Errorf("run container %d from %s: %w", i, image, err)
		}
		n := &dockerNode{res: res}
		c.all = append(c.all, n)
		ip := res.GetIPInNetwork(network)
		if ip == "" {
			return nil, fmt.Errorf("container %d has no address on network %s", i, network.Network.Name)
		}
		n.addr = net.JoinHostPort(ip, "6379")
		c.byAddr[n.addr] = n
		if err := c.waitPong(n); err != nil {
			return nil, err
		}
		// The address the node announces in CLUSTER SLOTS and on the bus.
		if _, err := nodeDo(n.addr, "CONFIG", "SET", "cluster-announce-ip", ip); err != nil {
			return nil, fmt.Errorf("CONFIG SET cluster-announce-ip on %s: %w", n.addr, err)
		}
	}
	c.masters, c.replicas = c.all[:3], c.all[3:]
	if err := c.create(); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, c.describe())
	}
	return c, nil
}

// waitPong waits until n answers PING at its network address.
func (c *dockerCluster) waitPong(n *dockerNode) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := nodeDo(n.addr, "PING")
		if err == nil && v == "PONG" {
			return nil
		}
		ct, ierr := c.pool.Client.InspectContainer(n.res.Container.ID)
		if ierr == nil && !ct.State.Running {
			return fmt.Errorf("container %s exited (code %d): %s", n.res.Container.Name, ct.State.ExitCode, c.logs(n))
		}
		if time.Now().After(deadline) {
			var ne net.Error
			if (errors.As(err, &ne) && ne.Timeout()) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
				return fmt.Errorf("%w: %s answers nothing at %s within 30 s (%v)", errUnroutable, n.res.Container.Name, n.addr, err)
			}
			return fmt.Errorf("%s at %s: no PONG within 30 s: %v; its log:\n%s", n.res.Container.Name, n.addr, err, c.logs(n))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// create makes the cluster by commands, as redis-cli --cluster create
// would: master i takes the i-th third of the slots (CLUSTER
// ADDSLOTSRANGE) and config epoch i+1, the first node meets every other
// (CLUSTER MEET), replica i replicates master i (CLUSTER REPLICATE) once it
// knows it, and the cluster must then agree and stream.
func (c *dockerCluster) create() error {
	for i, m := range c.masters {
		first, last := c.firstSlot(i), (i+1)*clusterSlots/len(c.masters)-1
		if _, err := nodeDo(m.addr, "CLUSTER", "ADDSLOTSRANGE", first, last); err != nil {
			return fmt.Errorf("CLUSTER ADDSLOTSRANGE on %s: %w", m.addr, err)
		}
		if _, err := nodeDo(m.addr, "CLUSTER", "SET-CONFIG-EPOCH", i+1); err != nil {
			return fmt.Errorf("CLUSTER SET-CONFIG-EPOCH on %s: %w", m.addr, err)
		}
	}
	for _, n := range c.all {
		id, err := redis.String(nodeDo(n.addr, "CLUSTER", "MYID"))
		if err != nil {
			return fmt.Errorf("CLUSTER MYID on %s: %w", n.addr, err)
		}
		n.id = id
	}
	for _, n := range c.all[1:] {
		host, port, _ := net.SplitHostPort(n.addr)
		if _, err := nodeDo(c.all[0].addr, "CLUSTER", "MEET", host, port); err != nil {
			return fmt.Errorf("CLUSTER MEET %s: %w", n.addr, err)
		}
	}
	var last string
	if !waitUntil(clusterWait, func() bool { last = c.acquainted(); return last == "" }) {
		return fmt.Errorf("the nodes do not all know each other within %v: %s", clusterWait, last)
	}
	for i, r := range c.replicas {
		ok := waitUntil(clusterWait, func() bool {
			_, err := nodeDo(r.addr, "CLUSTER", "REPLICATE", c.masters[i].id)
			last = fmt.Sprint(err)
			return err == nil
		})
		if !ok {
			return fmt.Errorf("CLUSTER REPLICATE on %s: %s", r.addr, last)
		}
	}
	if !waitUntil(clusterWait, func() bool { last = c.created(); return last == "" }) {
		return fmt.Errorf("the Redis Cluster did not come up within %v: %s", clusterWait, last)
	}
	if !waitUntil(clusterWait, func() bool { last = c.streaming(); return last == "" }) {
		return fmt.Errorf("the replicas do not acknowledge writes within %v: %s", clusterWait, last)
	}
	return nil
}

// firstSlot is master i's first slot at creation.
func (c *dockerCluster) firstSlot(i int) int { return i * clusterSlots / len(c.masters) }

// acquainted checks that every node knows all the others, past the
// handshake, and returns what is missing.
func (c *dockerCluster) acquainted() string {
	for _, n := range c.all {
		v, err := redis.String(nodeDo(n.addr, "CLUSTER", "NODES"))
		if err != nil {
			return fmt.Sprintf("CLUSTER NODES on %s: %v", n.addr, err)
		}
		lines := strings.Split(strings.TrimSpace(v), "\n")
		if len(lines) != len(c.all) {
			return fmt.Sprintf("%s knows %d nodes, want %d", n.addr, len(lines), len(c.all))
		}
		for _, l := range lines {
			if f := strings.Fields(l); len(f) < 3 || strings.Contains(f[2], "handshake") || strings.Contains(f[2], "noaddr") {
				return fmt.Sprintf("%s: %s", n.addr, l)
			}
		}
	}
	return ""
}

// created checks that the cluster is up as made, and returns what is
// still missing.
func (c *dockerCluster) created() string {
	m, why := c.agreed(c.all)
	if why != "" {
		return why
	}
	for i, master := range c.masters {
		if owner := m.OwnerAddr(c.firstSlot(i)); owner != master.addr {
			return fmt.Sprintf("slot %d is owned by %s, want %s", c.firstSlot(i), owner, master.addr)
		}
		info, err := redis.String(nodeDo(master.addr, "INFO", "replication"))
		if err != nil {
			return fmt.Sprintf("INFO replication on %s: %v", master.addr, err)
		}
		if on := strings.Count(info, ",state=online,"); on != 1 {
			return fmt.Sprintf("master %s streams to %d replicas, want 1", master.addr, on)
		}
		r := c.replicas[i]
		info, err = redis.String(nodeDo(r.addr, "INFO", "replication"))
		if err != nil {
			return fmt.Sprintf("INFO replication on %s: %v", r.addr, err)
		}
		if c.masterOf(info) != master || infoValue(info, "master_link_status") != "up" {
			return fmt.Sprintf("replica %s: role:%s master %s:%s link %s, want the replica of %s", r.addr, infoValue(info, "role"),
				infoValue(info, "master_host"), infoValue(info, "master_port"), infoValue(info, "master_link_status"), master.addr)
		}
	}
	return ""
}

// streaming checks that every master streams its writes to its replica:
// a write (FLUSHALL, on the empty cluster) that WAIT sees acknowledged. A
// replica's link is up and its master reports it online before the master
// streams anything to it (it waits for the replica's first REPLCONF ACK,
// sent once a second): see redistest's RedisCluster.streaming.
func (c *dockerCluster) streaming() string {
	for _, m := range c.masters {
		conn, err := redis.Dial("tcp", m.addr, redis.DialConnectTimeout(time.Second), redis.DialReadTimeout(5*time.Second))
		if err != nil {
			return fmt.Sprintf("dial %s: %v", m.addr, err)
		}
		_, err = conn.Do("FLUSHALL")
		var n int
		if err == nil {
			n, err = redis.Int(conn.Do("WAIT", 1, 1500))
		}
		conn.Close()
		if err != nil {
			return fmt.Sprintf("FLUSHALL and WAIT on %s: %v", m.addr, err)
		}
		if n < 1 {
			return fmt.Sprintf("the replica of %s did not acknowledge a write", m.addr)
		}
	}
	return ""
}

// masterOf returns the node a replica's INFO replication names as its
// master, nil when it names none of the cluster's.
func (c *dockerCluster) masterOf(info string) *dockerNode {
	if infoValue(info, "role") != "slave" {
		return nil
	}
	return c.byAddr[net.JoinHostPort(infoValue(info, "master_host"), infoValue(info, "master_port"))]
}

// live returns the nodes that run and are not paused.
func (c *dockerCluster) live() []*dockerNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*dockerNode
	for _, n := range c.all {
		if _, frozen := c.paused[n]; !frozen && !n.killed {
			out = append(out, n)
		}
	}
	return out
}

// agreed checks that every node of nodes reports cluster_state:ok and the
// same CLUSTER SLOTS, covering every slot; it returns the slot map or why
// not.
func (c *dockerCluster) agreed(nodes []*dockerNode) (redistest.SlotMap, string) {
	var first redistest.SlotMap
	for _, n := range nodes {
		info, err := redis.String(nodeDo(n.addr, "CLUSTER", "INFO"))
		if err != nil {
			return nil, fmt.Sprintf("CLUSTER INFO on %s: %v", n.addr, err)
		}
		if st := infoValue(info, "cluster_state"); st != "ok" {
			return nil, fmt.Sprintf("%s: cluster_state:%s", n.addr, st)
		}
		m, err := slotsOf(n.addr)
		if err != nil {
			return nil, fmt.Sprintf("CLUSTER SLOTS on %s: %v", n.addr, err)
		}
		if !m.Complete() {
			return nil, fmt.Sprintf("%s: CLUSTER SLOTS covers not every slot: %v", n.addr, m)
		}
		if first == nil {
			first = m
		} else if !slices.Equal(first, m) {
			return nil, fmt.Sprintf("%s and %s disagree: %v against %v", nodes[0].addr, n.addr, first, m)
		}
	}
	return first, ""
}

// killMaster kills (docker kill, SIGKILL) the container of the master that
// owns master i's first slot now, unpauses the replicas of it that
// pauseReplication froze, and waits until a replica is promoted: it owns
// the slot on every live node, which all report cluster_state:ok, and has
// role:master. It returns the new master's address. The killed container
// stays in the cluster, failed.
func (c *dockerCluster) killMaster(t *testing.T, i int) string {
	t.Helper()
	slot := c.firstSlot(i)
	old := c.ownerOf(slot)
	if old == nil {
		t.Fatalf("killMaster(%d): no live node names the owner of slot %d\n%s", i, slot, c.describe())
	}
	info, err := redis.String(nodeDo(old.addr, "INFO", "replication"))
	if err != nil || infoValue(info, "connected_slaves") == "0" {
		t.Fatalf("killMaster(%d): %s has no replica to promote (%v)", i, old.addr, err)
	}
	id := old.res.Container.ID
	if err := c.pool.Client.KillContainer(dc.KillContainerOptions{ID: id, Signal: dc.SIGKILL}); err != nil {
		t.Fatalf("docker kill %.12s: %v", id, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	_, err = c.pool.Client.WaitContainerWithContext(id, ctx)
	cancel()
	if err != nil {
		t.Fatalf("wait for container %.12s to stop: %v", id, err)
	}
	c.mu.Lock()
	old.killed = true
	var frozen []*dockerNode
	for r, m := range c.paused {
		if m == old {
			frozen = append(frozen, r)
			delete(c.paused, r)
		}
	}
	c.mu.Unlock()
	for _, r := range frozen {
		if err := c.pool.Client.UnpauseContainer(r.res.Container.ID); err != nil {
			t.Fatalf("docker unpause %s: %v", r.addr, err)
		}
	}
	var (
		last  string
		owner *dockerNode
	)
	ok := waitUntil(clusterWait, func() bool {
		m, why := c.agreed(c.live())
		if last = why; why != "" {
			return false
		}
		owner = c.byAddr[m.OwnerAddr(slot)]
		if owner == nil || owner == old {
			last = fmt.Sprintf("slot %d is still owned by %s", slot, m.OwnerAddr(slot))
			return false
		}
		info, err := redis.String(nodeDo(owner.addr, "INFO", "replication"))
		if err != nil || infoValue(info, "role") != "master" {
			last = fmt.Sprintf("%s owns slot %d but is not a master yet (%v)", owner.addr, slot, err)
			return false
		}
		return true
	})
	if !ok {
		t.Fatalf("killMaster(%d): no replica of %s was promoted within %v: %s\n%s", i, old.addr, clusterWait, last, c.describe())
	}
	return owner.addr
}

// ownerOf returns the node that owns slot by the first live node that
// answers CLUSTER SLOTS.
func (c *dockerCluster) ownerOf(slot int) *dockerNode {
	for _, n := range c.live() {
		if m, err := slotsOf(n.addr); err == nil {
			return c.byAddr[m.OwnerAddr(slot)]
		}
	}
	return nil
}

// pauseReplication holds back replication from master i's master of the
// moment to replica i (its only replica) until resume, or until
// killMaster kills that master: writes the master acknowledges meanwhile
// do not reach the replica before the master dies, so a replica promoted
// then lacks them. It is redistest's PauseReplication with docker pause
// for SIGSTOP: the container is frozen (cgroup freezer), then the master
// gets one write larger than what the kernel can hold in flight between
// the two, the replica socket's receive buffer (at most tcp_rmem's
// maximum) and the master socket's send buffer (tcp_wmem's), plus 1 MiB.
// A paused container's kernel still accepts data on its sockets, so
// without that write the replica would read the writes of the pause from
// its receive buffer once unpaused, even after its master died; with it,
// every later byte of the stream waits in the master's own memory, and
// dies with it. (Each container's network namespace starts with the
// host's tcp_rmem and tcp_wmem, which the test reads.)
func (c *dockerCluster) pauseReplication(t *testing.T, i int) (resume func()) {
	t.Helper()
	replica := c.replicas[i]
	info, err := redis.String(nodeDo(replica.addr, "INFO", "replication"))
	if err != nil {
		t.Fatalf("pauseReplication: INFO replication on %s: %v", replica.addr, err)
	}
	master := c.masterOf(info)
	if master == nil || infoValue(info, "master_link_status") != "up" {
		t.Fatalf("pauseReplication: %s is not a replica linked to a master of the cluster:\n%s", replica.addr, info)
	}
	m, err := slotsOf(master.addr)
	if err != nil {
		t.Fatalf("pauseReplication: CLUSTER SLOTS on %s: %v", master.addr, err)
	}
	filler := ""
	for k := 0; filler == "" && k < 10000; k++ {
		key := fmt.Sprintf("failover:replication-filler:%d", k)
		slot, err := redis.Int(nodeDo(master.addr, "CLUSTER", "KEYSLOT", key))
		if err != nil {
			t.Fatalf("pauseReplication: CLUSTER KEYSLOT on %s: %v", master.addr, err)
		}
		if m.OwnerAddr(slot) == master.addr {
			filler = key
		}
	}
	if filler == "" {
		t.Fatalf("pauseReplication: %s owns no slot", master.addr)
	}
	c.mu.Lock()
	if _, ok := c.paused[replica]; ok {
		c.mu.Unlock()
		t.Fatalf("pauseReplication: %s is paused already", replica.addr)
	}
	c.paused[replica] = master
	c.mu.Unlock()
	if err := c.pool.Client.PauseContainer(replica.res.Container.ID); err != nil {
		t.Fatalf("docker pause %s: %v", replica.addr, err)
	}
	if _, err := nodeDo(master.addr, "SET", filler, make([]byte, redistest.InFlightBound())); err != nil {
		t.Fatalf("pauseReplication: the filler write on %s: %v", master.addr, err)
	}
	if _, err := nodeDo(master.addr, "DEL", filler); err != nil {
		t.Fatalf("pauseReplication: DEL on %s: %v", master.addr, err)
	}
	resume = sync.OnceFunc(func() {
		c.mu.Lock()
		_, still := c.paused[replica]
		delete(c.paused, replica)
		c.mu.Unlock()
		if still {
			if err := c.pool.Client.UnpauseContainer(replica.res.Container.ID); err != nil {
				t.Errorf("docker unpause %s: %v", replica.addr, err)
			}
		}
	})
	t.Cleanup(resume)
	return resume
}

// describe returns every running node's CLUSTER NODES, for a failure
// message.
func (c *dockerCluster) describe() string {
	var b strings.Builder
	for _, n := range c.live() {
		v, err := redis.String(nodeDo(n.addr, "CLUSTER", "NODES"))
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", n.addr, err)
			continue
		}
		fmt.Fprintf(&b, "CLUSTER NODES on %s:\n%s", n.addr, v)
	}
	return b.String()
}

// logs returns the tail of a container's output.
func (c *dockerCluster) logs(n *dockerNode) string {
	var b strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.pool.Client.Logs(dc.LogsOptions{Context: ctx, Container: n.res.Container.ID,
		OutputStream: &b, ErrorStream: &b, Stdout: true, Stderr: true, Tail: "40"})
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return b.String()
}

// close unpauses what is paused and removes the containers and the
// network.
func (c *dockerCluster) close(t *testing.T) {
	defer closeIdle(c.pool)
	c.mu.Lock()
	for r := range c.paused {
		_ = c.pool.Client.UnpauseContainer(r.res.Container.ID)
	}
	clear(c.paused)
	c.mu.Unlock()
	for _, n := range c.all {
		if err := c.pool.Purge(n.res); err != nil {
			t.Errorf("remove container %s: %v", n.res.Container.Name, err)
		}
	}
	if err := c.pool.Client.RemoveNetwork(c.network.Network.ID); err != nil {
		t.Errorf("remove network %s: %v", c.network.Network.Name, err)
	}
}

// slotsOf reads CLUSTER SLOTS on the node at addr.
func slotsOf(addr string) (redistest.SlotMap, error) {
	return redistest.ParseSlotMap(nodeDo(addr, "CLUSTER", "SLOTS"))
}

// nodeDo runs one command on a new connection to addr. Its timeouts allow
// a slow write (pauseReplication's filler).
func nodeDo(addr, cmd string, args ...any) (any, error) {
	conn, err := redis.Dial("tcp", addr, redis.DialConnectTimeout(2*time.Second),
		redis.DialReadTimeout(10*time.Second), redis.DialWriteTimeout(10*time.Second))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.Do(cmd, args...)
}

// infoValue returns field's value in an INFO or CLUSTER INFO reply.
func infoValue(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// waitUntil polls cond every 50 ms until it holds or timeout passes.
func waitUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}
