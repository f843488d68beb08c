package failover

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
	"github.com/redlockplus/redlock/redlocktest"
)

// redisCluster is a Redis Cluster of 3 masters with one replica each, on
// Docker (clusterdocker_test.go) or as local processes
// (redistest.StartRedisCluster); TestClusterFailover runs the same on
// both.
type redisCluster interface {
	backend() string
	// seeds are addresses of live members, for redlock.ClusterNodes.
	seeds() []string
	// master is the address of master i at creation (the masters in the
	// order of their first slot), replica that of its only replica.
	master(i int) string
	replica(i int) string
	// killMaster SIGKILLs the master that owns master i's first slot now,
	// continues its replica if pauseReplication froze it, waits until the
	// cluster has promoted a replica in its place, and returns the new
	// master's address.
	killMaster(t *testing.T, i int) string
	// pauseReplication holds back replication to replica i until resume
	// or killMaster(i): writes acknowledged meanwhile are lost with the
	// master.
	pauseReplication(t *testing.T, i int) (resume func())
}

func (c *dockerCluster) backend() string { return string(redlocktest.BackendDocker) }

func (c *dockerCluster) seeds() []string {
	var out []string
	for _, n := range c.live() {
		out = append(out, n.addr)
	}
	return out
}

func (c *dockerCluster) master(i int) string  { return c.masters[i].addr }
func (c *dockerCluster) replica(i int) string { return c.replicas[i].addr }

// processCluster is the local-process backend: the repository's own
// harness, which the root package's cluster tests use.
type processCluster struct{ rc *redistest.RedisCluster }

func (p processCluster) backend() string                       { return string(redlocktest.BackendProcess) }
func (p processCluster) seeds() []string                       { return p.rc.Seeds() }
func (p processCluster) master(i int) string                   { return p.rc.Masters[i].Addr() }
func (p processCluster) replica(i int) string                  { return p.rc.Replicas[i][0].Addr() }
func (p processCluster) killMaster(t *testing.T, i int) string { return p.rc.KillMaster(t, i).Addr() }
func (p processCluster) pauseReplication(t *testing.T, i int) func() {
	return p.rc.PauseReplication(t, p.rc.Replicas[i][0])
}

// startCluster starts the cluster on the backend REDLOCKTEST_BACKEND
// names, as redlocktest.Start chooses: docker (the test fails without an
// engine), process, or auto (Docker when an engine answers and this host
// reaches its containers, else local processes; skipped when neither is
// there).
func startCluster(t *testing.T) redisCluster {
	t.Helper()
	backend := redlocktest.Backend(os.Getenv(redlocktest.EnvBackend))
	switch backend {
	case redlocktest.BackendDocker, redlocktest.BackendAuto, "":
		pool, err := dockerPing()
		if err != nil {
			if backend == redlocktest.BackendDocker {
				t.Fatalf("the Docker backend was asked for, but %v", err)
			}
			break
		}
		image, err := redlocktest.BuildLocalImage()
		if err != nil {
			closeIdle(pool)
			t.Fatalf("the local Redis image: %v", err)
		}
		c, err := startDockerCluster(t, pool, image)
		switch {
		case err == nil:
			return c
		case errors.Is(err, errUnroutable) && backend != redlocktest.BackendDocker:
			t.Logf("Docker answers, but %v; the cluster runs as local processes instead", err)
		case errors.Is(err, errUnroutable):
			t.Fatalf("the Docker backend was asked for, but %v. The cluster's nodes announce their addresses on the "+
				"Docker network (CLUSTER SLOTS), which the test process must reach: run it on a Linux host with a local "+
				"engine, or with %s=%s", err, redlocktest.EnvBackend, redlocktest.BackendProcess)
		default:
			t.Fatalf("the Redis Cluster on Docker: %v", err)
		}
	case redlocktest.BackendProcess:
	default:
		t.Fatalf("unknown backend %q in %s: use %q, %q or %q", backend, redlocktest.EnvBackend,
			redlocktest.BackendDocker, redlocktest.BackendProcess, redlocktest.BackendAuto)
	}
	if !redistest.Available() && backend != redlocktest.BackendProcess {
		t.Skipf("no Redis backend: no Docker engine answers and %s is not installed (apt-get install docker.io, or redis-server and redis-tools)", redistest.Binary())
	}
	return processCluster{redistest.StartRedisCluster(t, 3, 1)}
}

// TestClusterFailover: Redlock over the masters of one Redis Cluster
// (redlock.ClusterNodes) through the failover of a master to its replica,
// with and without WithReplicaAck.
func TestClusterFailover(t *testing.T) {
	start := time.Now()
	cl := startCluster(t)
	t.Logf("backend: %s; masters %s, %s, %s with replicas %s, %s, %s; cluster up in %v", cl.backend(),
		cl.master(0), cl.master(1), cl.master(2), cl.replica(0), cl.replica(1), cl.replica(2),
		time.Since(start).Round(time.Millisecond))
	// Master 0 fails over in the first, master 1 in the second.
	t.Run("1_contention_through_failover_with_replica_ack", func(t *testing.T) { clusterContention(t, cl) })
	t.Run("2_control_without_replica_ack", func(t *testing.T) { clusterControl(t, cl) })
}

// clusterContention: 8 clients of 4 factories over ClusterNodes, with
// WithReplicaAck(1), contend for two locks with the lost-update witness
// while master 0 is killed and its replica promoted: no overlap, no lost
// update, acquisitions after the failover, every client follows node 0 to
// the promoted replica, and the promoted replica holds the key of every
// lock acquired (with WithQuorum(3)) before the kill.
func clusterContention(t *testing.T, cl redisCluster) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Locks held across the failover: a minute's TTL, on all three
	// masters, each write acknowledged by the master's replica.
	holder, _ := clusterFactory(t, cl, redlock.WithQuorum(3), redlock.WithReplicaAck(1), redlock.WithTTL(time.Minute))
	waitAllVote(t, holder)
	tag := keyTag(t, holder, cl.master(0))
	held := map[string]string{} // name: token
	for i := range 20 {
		name := fmt.Sprintf("c1:held:%d", i)
		l := holder.NewLock(name)
		if _, err := l.TryAcquire(ctx); err != nil {
			t.Fatalf("lock %s before the failover: %v", name, err)
		}
		held[name] = l.Token()
	}
	for name, token := range held {
		if got := tokenAt(t, cl.master(0), tag+name); got != token {
			t.Fatalf("master 0 (%s) holds %q under %s, want the token %q", cl.master(0), got, tag+name, token)
		}
	}

	const factories, perFactory = 4, 2
	h := newHistory()
	var stops []func()
	stopAll := func() {
		for _, s := range stops {
			s()
		}
	}
	defer stopAll() // before the cleanups close the factories, when the test fails early
	var (
		clientNodes [][]redlock.Node
		clients     []*redlock.Factory
	)
	for range factories {
		f, nodes := clusterFactory(t, cl, redlock.WithReplicaAck(1), redlock.WithTTL(2*time.Second))
		clientNodes, clients = append(clientNodes, nodes), append(clients, f)
		// The retry pause is the library's default, 200 ms, not the few
		// milliseconds of the suite's other contention runs: after the
		// failover node 0 (the promoted replica, which has no replica of
		// its own) fails every write's WAIT, and its pipelined connection
		// answers late, so that every attempt takes about a node timeout;
		// only the other two masters can vote, and with pauses much
		// shorter than an attempt the clients split them between two
		// holders attempt after attempt (with 5 ms: no acquisition in the
		// 4 s after the promotion).
		w := workload{
			clients: perFactory, names: []string{"c1:a", "c1:b"}, newLocker: libLockers(f),
			retryDelay: redlock.DefaultRetryDelay, hold: holdUniform(2 * time.Millisecond), witness: true,
		}
		stop, _ := w.start(h)
		stops = append(stops, stop)
	}
	time.Sleep(3 * time.Second)
	killed := now()
	promoted := cl.killMaster(t, 0)
	up := now()
	time.Sleep(4 * time.Second) // two TTLs: past the node guard's window for the moved node
	stopAll()
	end := now()
	// Closed here, to time it: Close waits until every pipelined write is
	// out, and node 0's connection drains its queue one WAIT timeout at a
	// time.
	var closing time.Duration
	for _, f := range clients {
		t0 := time.Now()
		_ = f.Close()
		closing = max(closing, time.Since(t0))
	}

	before, during, after := h.successesIn(0, killed), h.successesIn(killed, up), h.successesIn(up, end)
	var missing []string
	for name, token := range held {
		if got := tokenAt(t, promoted, tag+name); got != token {
			missing = append(missing, fmt.Sprintf("%s (%q)", tag+name, got))
		}
	}
	r := h.figures("cluster failover, WithReplicaAck(1), 4 factories over ClusterNodes", factories*perFactory)
	r.Backend, r.Wall = cl.backend(), time.Since(start)
	r.Note = fmt.Sprintf("%d critical sections (witness writes); acquisitions %d before the kill, %d during the failover, %d after; "+
		"failover %v (kill to promoted replica agreed), longest gap without an acquisition %v; %d of %d locks held since before the kill on the promoted replica %s; "+
		"slowest Factory.Close %v",
		witnessWrites(h), before, during, after, (up - killed).Round(time.Millisecond), h.longestGap(killed, end).Round(time.Millisecond),
		len(held)-len(missing), len(held), promoted, closing.Round(time.Millisecond))
	r.log(t)
	for i, o := range h.overlaps() {
		if i == 5 {
			break
		}
		t.Errorf("overlap: %v", o)
	}
	if r.Overlaps > 0 {
		t.Errorf("%d overlaps", r.Overlaps)
	}
	if r.LostUpdates > 0 {
		t.Errorf("%d lost updates", r.LostUpdates)
	}
	if before == 0 || after == 0 {
		t.Errorf("acquisitions: %d before the kill, %d after the promotion; want some of each", before, after)
	}
	if len(missing) > 0 {
		t.Errorf("with WithReplicaAck(1) the promoted replica %s lacks or changed %d locks held since before the kill: %s",
			promoted, len(missing), strings.Join(missing, ", "))
	}
	for k, nodes := range clientNodes {
		if !followed(nodes, promoted) {
			t.Errorf("factory %d's nodes are at %s, none at the promoted replica %s", k, addrs(nodes), promoted)
		}
	}
}

// clusterControl, the negative control: without WithReplicaAck, locks
// acquired with WithQuorum(3) while replication from master 1 to its
// replica is held back (docker pause of the replica, and a write that
// fills the kernel's buffers between the two) are missing from that
// replica once the kill of master 1 promotes it; locks acquired before the
// pause, seen on the replica, are there. This is the loss WithReplicaAck
// prevents, and it shows the first scenario's check would see it.
func clusterControl(t *testing.T, cl redisCluster) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, _ := clusterFactory(t, cl, redlock.WithQuorum(3), redlock.WithTTL(time.Minute))
	waitAllVote(t, f)
	tag := keyTag(t, f, cl.master(1))
	take := func(prefix string, n int) map[string]string {
		out := map[string]string{}
		for i := range n {
			name := fmt.Sprintf("%s:%d", prefix, i)
			l := f.NewLock(name)
			if _, err := l.TryAcquire(ctx); err != nil {
				t.Fatalf("lock %s: %v", name, err)
			}
			out[name] = l.Token()
		}
		return out
	}
	missingOn := func(addr string, locks map[string]string) int {
		n := 0
		for name, token := range locks {
			if tokenAt(t, addr, tag+name) != token {
				n++
			}
		}
		return n
	}

	before := take("c2:before", 10)
	if !waitUntil(10*time.Second, func() bool { return missingOn(cl.replica(1), before) == 0 }) {
		t.Fatalf("the replica %s lacks %d of %d locks 10 s after they were acquired: replication does not work, and the control would show nothing",
			cl.replica(1), missingOn(cl.replica(1), before), len(before))
	}
	resume := cl.pauseReplication(t, 1)
	paused := take("c2:paused", 20)
	if n := missingOn(cl.master(1), paused); n != 0 {
		t.Fatalf("master 1 (%s) lacks %d of the %d locks acquired during the pause", cl.master(1), n, len(paused))
	}
	killed := time.Now()
	promoted := cl.killMaster(t, 1)
	failover := time.Since(killed)
	resume()
	if promoted != cl.replica(1) {
		t.Fatalf("%s was promoted in place of master 1, not its replica %s", promoted, cl.replica(1))
	}
	lostBefore, lostPaused := missingOn(promoted, before), missingOn(promoted, paused)
	t.Logf("control [%s]: without WithReplicaAck, %d of %d locks acquired during the pause are missing on the promoted replica %s, "+
		"%d of %d acquired before it; failover %v; wall=%v", cl.backend(), lostPaused, len(paused), promoted,
		lostBefore, len(before), failover.Round(time.Millisecond), time.Since(start).Round(10*time.Millisecond))
	if lostBefore != 0 {
		t.Errorf("%d locks the replica had before the pause are missing after its promotion", lostBefore)
	}
	if lostPaused == 0 {
		t.Errorf("negative control: the promoted replica has every lock acquired during the pause; the pause did not hold back replication")
	}
}

// clusterFactory returns a factory over the nodes of redlock.ClusterNodes
// whose TryAcquire makes one attempt and whose locks do not autoextend,
// unless opts say otherwise, and the nodes; the factory, then the
// cluster's pools, are closed at the end of the test.
func clusterFactory(t *testing.T, cl redisCluster, opts ...redlock.Option) (*redlock.Factory, []redlock.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nodes, err := redlock.ClusterNodes(ctx, cl.seeds())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nodes[0].(interface{ Close() error }).Close() })
	base := []redlock.Option{redlock.WithRetryTimes(0), redlock.WithAutoextend(false)}
	f, err := redlock.NewFactoryFromNodes(nodes, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f, nodes
}

// waitAllVote waits until every node votes for f's locks (Factory.Health).
func waitAllVote(t *testing.T, f *redlock.Factory) {
	t.Helper()
	var why []string
	ok := waitUntil(30*time.Second, func() bool {
		hs, err := f.Health(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		why = why[:0]
		for _, h := range hs {
			if !h.Voting {
				why = append(why, h.Addr+": "+h.Why)
			}
		}
		return len(why) == 0
	})
	if !ok {
		t.Fatalf("nodes out of the vote after 30 s: %s", strings.Join(why, "; "))
	}
}

// keyTag returns the hash tag ("{7}") that f's node at the master addr
// puts in front of its keys.
func keyTag(t *testing.T, f *redlock.Factory, addr string) string {
	t.Helper()
	hs, err := f.Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.Addr == addr && h.KeyTag != "" {
			return h.KeyTag
		}
	}
	t.Fatalf("no node of the factory is at %s", addr)
	return ""
}

// tokenAt returns the value of key on the node at addr, master or replica
// (READONLY), "" when it has none.
func tokenAt(t *testing.T, addr, key string) string {
	t.Helper()
	conn, err := redis.Dial("tcp", addr, redis.DialConnectTimeout(2*time.Second),
		redis.DialReadTimeout(5*time.Second), redis.DialWriteTimeout(5*time.Second))
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	if _, err := conn.Do("READONLY"); err != nil {
		t.Fatalf("READONLY on %s: %v", addr, err)
	}
	v, err := redis.String(conn.Do("GET", key))
	if errors.Is(err, redis.ErrNil) {
		return ""
	}
	if err != nil {
		t.Fatalf("GET %s on %s: %v", key, addr, err)
	}
	return v
}

// witnessWrites is how many critical sections wrote the witness.
func witnessWrites(h *history) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var n int64
	for _, w := range h.witness {
		n += w.writes.Load()
	}
	return n
}

// followed reports whether one of nodes is at addr now.
func followed(nodes []redlock.Node, addr string) bool {
	for _, n := range nodes {
		if n.Addr() == addr {
			return true
		}
	}
	return false
}

func addrs(nodes []redlock.Node) string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Addr())
	}
	return strings.Join(out, ", ")
}
