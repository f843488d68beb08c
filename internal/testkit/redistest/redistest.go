// Package redistest starts real redis-server processes for the tests of this
// module. It is not a mock: every node is a separate redis-server on a free
// loopback port, started by internal/redisproc (the one starter the
// repository's tests share), and faults are injected by signalling the
// process.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pipeline"
	"github.com/redlockplus/redlock/internal/redisproc"
)

// Binary is the redis-server executable the harness starts. REDIS_SERVER overrides it.
func Binary() string {
	if b := os.Getenv("REDIS_SERVER"); b != "" {
		return b
	}
	return "redis-server"
}

// Available reports whether a redis-server binary can be found.
func Available() bool {
	_, err := exec.LookPath(Binary())
	return err == nil
}

// serverArgs make a node durable: every write is in the AOF, fsynced
// before the reply, so that the node guard (WithRestartGuard) lets a node
// that has just started vote at once, as it does for a durable production
// node. The data directory is on tmpfs where there is one, so the fsyncs
// cost nothing. Volatile undoes it.
var serverArgs = []string{
	"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--protected-mode", "no", "--loglevel", "warning",
}

// Volatile are the extra arguments of a node that persists nothing: it
// restarts empty, and the restart guard keeps it out of the vote for a
// TTL after every start.
var Volatile = []string{"--appendonly", "no"}

// shm is where data directories go: tmpfs, when the machine has it.
const shm = "/dev/shm"

// shmOrTemp is shm when it exists, else the default temporary directory.
func shmOrTemp() string {
	if st, err := os.Stat(shm); err == nil && st.IsDir() {
		return shm
	}
	return ""
}

// dataDir returns a directory for a node's files, removed by tb's cleanup.
func dataDir(tb testing.TB) string {
	if st, err := os.Stat(shm); err == nil && st.IsDir() {
		if dir, err := os.MkdirTemp(shm, "redistest"); err == nil {
			tb.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	return tb.TempDir()
}

// Node is one redis-server process. It keeps its port across Kill and
// Start, so that clients find it again where they expect it.
type Node struct {
	tb   testing.TB // nil for nodes started by StartMain
	dir  string
	Port int      // chosen free at the first start, kept afterwards
	Args []string // extra redis-server arguments
	Env  []string // added to the process's environment at each Start
	mu   sync.Mutex
	proc *redisproc.Process
	pool *redis.Pool
}

// Cluster is a set of independent redis-server nodes.
type Cluster struct {
	Nodes []*Node
}

// Start launches n durable redis-server processes (see serverArgs) and registers
// their shutdown with tb.Cleanup. The test fails when redis-server is missing.
func Start(tb testing.TB, n int, extraArgs ...string) *Cluster {
	tb.Helper()
	if !Available() {
		tb.Fatalf("redistest: %s not found; install it with: apt-get install -y redis-server", Binary())
	}
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = dataDir(tb) // before the cleanup below, so removed after the nodes stop
	}
	c := &Cluster{}
	tb.Cleanup(c.stop) // before the first start, so that a failed one leaks no node
	for _, dir := range dirs {
		nd := &Node{tb: tb, Args: extraArgs, dir: dir}
		c.Nodes = append(c.Nodes, nd)
		nd.Start()
	}
	return c
}

// StartMain launches n nodes for a TestMain, where there is no testing.TB:
// the runnable examples read their URLs from a variable TestMain sets. Call
// Stop when done.
func StartMain(n int) (*Cluster, error) {
	c := &Cluster{}
	for i := 0; i < n; i++ {
		dir, err := os.MkdirTemp(shmOrTemp(), "redistest")
		if err != nil {
			c.Stop()
			return nil, err
		}
		nd := &Node{dir: dir}
		c.Nodes = append(c.Nodes, nd)
		if err := nd.start(); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// Stop kills every node of a StartMain cluster and removes its files.
func (c *Cluster) Stop() {
	c.stop()
	for _, n := range c.Nodes {
		if n.tb == nil {
			_ = os.RemoveAll(n.dir)
		}
	}
}

func (c *Cluster) stop() {
	for _, n := range c.Nodes {
		n.shutdown()
	}
}

// Addrs returns host:port of every node.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr()
	}
	return out
}

// URLs returns redis:// URLs of every node.
func (c *Cluster) URLs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.URL()
	}
	return out
}

// Pools returns one redigo pool per node, closed at test cleanup.
func (c *Cluster) Pools() []*redis.Pool {
	out := make([]*redis.Pool, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Pool()
	}
	return out
}

// FlushAll empties every node that is running.
func (c *Cluster) FlushAll() {
	for _, n := range c.Nodes {
		if n.Running() {
			n.Do("FLUSHALL")
		}
	}
}

// Addr returns the node's host:port.
func (n *Node) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port)) }

// URL returns the node's redis:// URL.
func (n *Node) URL() string { return "redis://" + n.Addr() }

// Pool returns a redigo pool for the node (created once, closed at cleanup).
func (n *Node) Pool() *redis.Pool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.pool == nil {
		addr := n.Addr()
		n.pool = &redis.Pool{
			MaxIdle:     64,
			IdleTimeout: time.Minute,
			DialContext: func(ctx context.Context) (redis.Conn, error) {
				return redis.DialContext(ctx, "tcp", addr, redis.DialConnectTimeout(time.Second))
			},
		}
		// As for redlock.NewPool's pools: the pipelined transport dials a
		// socket of its own, which it writes to directly.
		pipeline.RememberPool(n.pool, pipeline.PoolFacts{Dial: pipeline.SocketDialer("redis://"+addr, nil)})
	}
	return n.pool
}

// Do runs one command on a fresh connection and fails the test on error.
func (n *Node) Do(cmd string, args ...any) any {
	c, err := redis.Dial("tcp", n.Addr(), redis.DialConnectTimeout(2*time.Second), redis.DialReadTimeout(5*time.Second))
	if err != nil {
		n.fatalf("redistest: dial %s: %v", n.Addr(), err)
	}
	defer c.Close()
	v, err := c.Do(cmd, args...)
	if err != nil {
		n.fatalf("redistest: %s on %s: %v", cmd, n.Addr(), err)
	}
	return v
}

// Running reports whether the process is alive (it may be paused).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil
}

// RunID returns the run id the running process reported when it started,
// new at every start ("" when the node is not running).
func (n *Node) RunID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return ""
	}
	return n.proc.RunID
}

// Start launches the process (again, after Kill) on the node's port and
// waits until the server answering there is this process.
func (n *Node) Start() {
	if err := n.start(); err != nil {
		n.fatalf("redistest: %v", err)
	}
}

func (n *Node) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc != nil {
		return errors.New("node " + n.Addr() + " is already running")
	}
	p, err := redisproc.Start(redisproc.Config{
		Binary: Binary(), Dir: n.dir, Port: n.Port, Env: n.Env,
		Args: append(append([]string(nil), serverArgs...), n.Args...),
	})
	if err != nil {
		return err
	}
	n.proc = p
	if n.Port == 0 { // written once, before the node is shared
		n.Port = p.Port
	}
	return nil
}

// fatalf fails the test, or panics in a TestMain.
func (n *Node) fatalf(format string, args ...any) {
	if n.tb != nil {
		n.tb.Helper()
		n.tb.Fatalf(format, args...)
	}
	panic(fmt.Sprintf(format, args...))
}

// Kill sends SIGKILL and waits for the process to exit. Data is lost.
func (n *Node) Kill() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return
	}
	n.proc.Kill()
	n.proc = nil
}

// RestartVolatile kills the node and starts it again empty, persisting
// nothing from then on (Volatile): to the node guard it has just
// restarted without durable storage.
func (n *Node) RestartVolatile() {
	n.Args = Volatile
	n.Kill()
	n.Start()
}

// Pause freezes the process with SIGSTOP: connections stay open and hang.
func (n *Node) Pause() { n.signal(syscall.SIGSTOP) }

// Resume continues a paused process with SIGCONT.
func (n *Node) Resume() { n.signal(syscall.SIGCONT) }

func (n *Node) signal(sig syscall.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		n.fatalf("redistest: node %s is not running", n.Addr())
	}
	if err := n.proc.Signal(sig); err != nil {
		n.fatalf("redistest: signal %v to %s: %v", sig, n.Addr(), err)
	}
}

func (n *Node) shutdown() {
	n.mu.Lock()
	p := n.pool
	n.pool = nil
	n.mu.Unlock()
	if p != nil {
		_ = p.Close()
	}
	n.Kill()
}
