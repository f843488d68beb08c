package redlocktest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/ory/dockertest/v3"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/clockshim"
)

// backend runs the Redis nodes of a cluster. Node indexes are added in
// order 0, 1, ...; every call but close is made for a valid index.
type backend interface {
	name() string
	// add starts a new node and returns the address it answers on.
	add(i int) (string, error)
	// kill stops node i at once (SIGKILL), losing what it did not persist.
	kill(i int) error
	// restart starts the killed node i again and returns its address,
	// which may have changed.
	restart(i int) (string, error)
	pause(i int) error
	unpause(i int) error
	// close stops and removes everything the backend made.
	close() error
}

// nodeState is what Cluster knows of a node's process.
type nodeState int

const (
	stateRunning nodeState = iota
	statePaused
	stateKilled
)

// Cluster is a set of independent Redis nodes for a test, each behind a
// fault-injecting TCP proxy on a fixed loopback address. Clients connect to
// the proxies (Pools, URLs, Addrs), so the address of a node never changes,
// even when the node is restarted, and network faults work the same on
// every backend.
//
// The fault methods fail the test, through t.Fatal, when they cannot do
// their job; like t.Fatal they must be called from the goroutine running
// the test. Clients may use the nodes from any goroutine meanwhile.
type Cluster struct {
	tb      testing.TB
	backend backend
	proxies []*faultProxy
	pools   []*redis.Pool
	gens    []*atomic.Int64    // per node, bumped by Kill and Restart
	clocks  []*clockshim.Clock // per node, nil on the real clock (WithClockShim)

	mu      sync.Mutex // serialises fault operations
	state   []nodeState
	clients []*Client
}

// Start starts n Redis nodes (n >= 1; Redlock needs at least 3) with no
// persistence unless WithPersistence is given, and registers their removal
// with tb.Cleanup. The backend is chosen as WithBackend says; with
// BackendAuto, when neither a Docker engine nor a redis-server binary is
// available, the test is skipped with a message saying what to install.
// Any other failure fails the test.
func Start(tb testing.TB, n int, opts ...Option) *Cluster {
	tb.Helper()
	if n < 1 {
		tb.Fatalf("redlocktest: Start needs at least 1 node, got %d", n)
	}
	cfg := newConfig(opts)
	if cfg.startTimeout <= 0 {
		tb.Fatalf("redlocktest: start timeout %v is not positive", cfg.startTimeout)
	}
	c := &Cluster{tb: tb}
	// The clocks' files go first, so that they are removed after the
	// nodes that read them (cleanups run last in, first out).
	c.clocks = newClocks(tb, cfg, n)
	cfg.clocks = c.clocks
	c.backend = chooseBackend(tb, cfg)
	tb.Cleanup(c.close)
	for i := 0; i < n; i++ {
		addr, err := c.backend.add(i)
		if err != nil {
			tb.Fatalf("redlocktest: start node %d on the %s backend: %v", i, c.backend.name(), err)
		}
		p, err := newFaultProxy(addr)
		if err != nil {
			tb.Fatalf("redlocktest: node %d: %v", i, err)
		}
		c.proxies = append(c.proxies, p)
		c.state = append(c.state, stateRunning)
		gen := new(atomic.Int64)
		c.gens = append(c.gens, gen)
		pool, err := newNodePool(p.addr, gen)
		if err != nil {
			tb.Fatalf("redlocktest: node %d: %v", i, err)
		}
		c.pools = append(c.pools, pool)
	}
	return c
}

// chooseBackend returns the backend cfg asks for, skipping or failing the
// test when it is not available.
func chooseBackend(tb testing.TB, cfg config) backend {
	tb.Helper()
	id := randomID()
	switch cfg.backend {
	case BackendDocker:
		pool, err := dockerPool()
		if err != nil {
			tb.Fatalf("redlocktest: the Docker backend was asked for, but %v", err)
		}
		return dockerOrFail(tb, cfg, pool, id)
	case BackendProcess:
		b, err := newProcessBackend(cfg, tb.TempDir())
		if err != nil {
			tb.Fatalf("redlocktest: the process backend was asked for, but %v", err)
		}
		return b
	case BackendAuto:
		pool, dockerErr := dockerPool()
		if dockerErr == nil {
			return dockerOrFail(tb, cfg, pool, id)
		}
		b, procErr := newProcessBackend(cfg, tb.TempDir())
		if procErr == nil {
			return b
		}
		tb.Skipf("redlocktest: no Redis backend: %v; and %v. Install Docker (apt-get install docker.io) or redis-server (apt-get install redis-server)", dockerErr, procErr)
	default:
		tb.Fatalf("redlocktest: unknown backend %q (from WithBackend or %s): use %q, %q or %q", cfg.backend, EnvBackend, BackendDocker, BackendProcess, BackendAuto)
	}
	return nil
}

func dockerOrFail(tb testing.TB, cfg config, pool *dockertest.Pool, id string) backend {
	tb.Helper()
	b, note, err := newDockerBackend(cfg, pool, id)
	if err != nil {
		tb.Fatalf("redlocktest: Docker backend: %v", err)
	}
	if note != "" {
		tb.Logf("redlocktest: %s", note)
	}
	return b
}

// randomID returns 8 random hex digits that name a cluster's containers.
func randomID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// close removes everything Start made; it runs at test cleanup.
func (c *Cluster) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.clients {
		cl.close()
	}
	for _, p := range c.pools {
		_ = p.Close()
	}
	for _, p := range c.proxies {
		p.close()
	}
	if c.backend != nil {
		if err := c.backend.close(); err != nil {
			c.tb.Errorf("redlocktest: cleanup of the %s backend: %v", c.backend.name(), err)
		}
	}
}

// Len returns the number of nodes.
func (c *Cluster) Len() int { return len(c.proxies) }

// Backend returns the backend running the nodes: BackendDocker or
// BackendProcess.
func (c *Cluster) Backend() Backend { return Backend(c.backend.name()) }

// Pools returns one connection pool per node, in node order, for
// redlock.NewFactory or redlock.NewLock. The pools connect through the
// nodes' proxies, are *redis.Pool values made by redlock.NewPool, and are
// closed at test cleanup. A pool drops the idle connections that predate its node's last
// Kill or Restart instead of handing them out; clients with pools of their
// own (from URLs) see those dead connections fail once, as in production.
func (c *Cluster) Pools() []redlock.Pool {
	out := make([]redlock.Pool, len(c.pools))
	for i, p := range c.pools {
		out[i] = p
	}
	return out
}

// URLs returns the redis:// URL of every node, in node order, for
// redlock.NewFactoryFromURLs or another client. Each stays valid across
// Kill and Restart.
func (c *Cluster) URLs() []string {
	out := make([]string, len(c.proxies))
	for i, p := range c.proxies {
		out[i] = "redis://" + p.addr
	}
	return out
}

// Addrs returns the host:port of every node, in node order.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.proxies))
	for i, p := range c.proxies {
		out[i] = p.addr
	}
	return out
}

// check fails the test unless i is a node index.
func (c *Cluster) check(op string, i int) {
	c.tb.Helper()
	if i < 0 || i >= len(c.proxies) {
		c.tb.Fatalf("redlocktest: %s(%d): no such node; the cluster has nodes 0 to %d", op, i, len(c.proxies)-1)
	}
}

// fail fails the test with a message naming the operation and node.
func (c *Cluster) fail(op string, i int, err error) {
	c.tb.Helper()
	c.tb.Fatalf("redlocktest: %s(%d) on the %s backend: %v", op, i, c.backend.name(), err)
}

// Kill stops node i at once with SIGKILL. Its keys are lost unless
// persistence is on. Until Restart, its address refuses connections and
// open connections are reset, as at a host whose server died, so clients
// see "connection refused" (a partitioned or paused node times out
// instead). A paused node is continued and killed; killing a killed node
// does nothing.
func (c *Cluster) Kill(i int) {
	c.tb.Helper()
	c.check("Kill", i)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.killLocked("Kill", i)
}

// killLocked kills node i unless it is killed already, continuing it first
// if paused; c.mu is held.
func (c *Cluster) killLocked(op string, i int) {
	c.tb.Helper()
	switch c.state[i] {
	case stateKilled:
		return
	case statePaused:
		if err := c.backend.unpause(i); err != nil {
			c.fail(op, i, err)
		}
	}
	if err := c.backend.kill(i); err != nil {
		c.fail(op, i, err)
	}
	for _, p := range append([]*faultProxy{c.proxies[i]}, c.clientProxies(i)...) {
		p.refuse()
	}
	c.gens[i].Add(1)
	c.state[i] = stateKilled
}

// Restart starts node i again, behind the same address, and waits until it
// answers. A node that is still running is killed first, as in a crash and
// reboot. Without persistence it comes back empty. Network faults set on the
// node (Partition, Delay, CutReplies) stay in place.
func (c *Cluster) Restart(i int) {
	c.tb.Helper()
	c.check("Restart", i)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.killLocked("Restart", i)
	addr, err := c.backend.restart(i)
	if err != nil {
		c.fail("Restart", i, err)
	}
	for _, p := range append([]*faultProxy{c.proxies[i]}, c.clientProxies(i)...) {
		if err := p.setUpstream(addr); err != nil {
			c.fail("Restart", i, err)
		}
		if err := p.listen(); err != nil {
			c.fail("Restart", i, err)
		}
	}
	c.gens[i].Add(1)
	c.state[i] = stateRunning
}

// clientProxies returns every Client's proxy in front of node i; c.mu is
// held.
func (c *Cluster) clientProxies(i int) []*faultProxy {
	out := make([]*faultProxy, 0, len(c.clients))
	for _, cl := range c.clients {
		out = append(out, cl.proxies[i])
	}
	return out
}

// Pause freezes node i (SIGSTOP, or a paused container): connections stay
// open, and commands sent to it hang until Unpause. Pausing a paused node
// does nothing; pausing a killed node fails the test.
func (c *Cluster) Pause(i int) {
	c.tb.Helper()
	c.check("Pause", i)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state[i] {
	case statePaused:
		return
	case stateKilled:
		c.fail("Pause", i, fmt.Errorf("node is killed; Restart it first"))
	}
	if err := c.backend.pause(i); err != nil {
		c.fail("Pause", i, err)
	}
	c.state[i] = statePaused
}

// Unpause lets a paused node i run again; the commands that were waiting
// are then executed. It does nothing when the node is not paused.
func (c *Cluster) Unpause(i int) {
	c.tb.Helper()
	c.check("Unpause", i)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state[i] != statePaused {
		return
	}
	if err := c.backend.unpause(i); err != nil {
		c.fail("Unpause", i, err)
	}
	c.state[i] = stateRunning
}

// Partition cuts node i off from every client: from now on no byte gets
// through its proxy in either direction, on open and new connections alike.
// Nothing is closed or reset, so clients see timeouts, as with packets
// dropped by a network partition (a new connection is still accepted, by the
// proxy, but nothing crosses it). The node itself keeps running.
func (c *Cluster) Partition(i int) {
	c.tb.Helper()
	c.check("Partition", i)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.proxies[i].partition(); err != nil {
		c.fail("Partition", i, err)
	}
}

// Heal removes every network fault of node i: Partition, Delay and
// CutReplies. A connection that the partition dropped bytes of is reset,
// as TCP gives up on a connection rather than skip bytes; connections that
// carried nothing meanwhile, and new ones, work at once.
func (c *Cluster) Heal(i int) {
	c.tb.Helper()
	c.check("Heal", i)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.proxies[i].heal()
}

// Delay holds back every reply of node i by d, until Delay(i, 0) or Heal.
// A new delay replaces the previous one; a negative d fails the test. The
// proxy works in milliseconds.
func (c *Cluster) Delay(i int, d time.Duration) {
	c.tb.Helper()
	c.check("Delay", i)
	if d < 0 {
		c.fail("Delay", i, fmt.Errorf("negative delay %v", d))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.proxies[i].setDelay(d); err != nil {
		c.fail("Delay", i, err)
	}
}

// CutReplies makes node i execute what it receives but lose its replies:
// the connection is closed when a reply reaches the proxy, so the client
// gets a connection error without knowing whether its command ran. Heal
// ends it.
func (c *Cluster) CutReplies(i int) {
	c.tb.Helper()
	c.check("CutReplies", i)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.proxies[i].cut(); err != nil {
		c.fail("CutReplies", i, err)
	}
}
