// Package redistest starts real redis-server processes for the tests of this
// module. It is not a mock: every node is a separate redis-server listening on
// a free loopback port, and faults are injected by signalling the process.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
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

// Node is one redis-server process.
type Node struct {
	tb     testing.TB // nil for nodes started by StartMain
	dir    string
	Port   int
	Args   []string // extra redis-server arguments
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	pool   *redis.Pool
}

// Cluster is a set of independent redis-server nodes.
type Cluster struct {
	Nodes []*Node
}

// Start launches n redis-server processes with no persistence and registers
// their shutdown with tb.Cleanup. The test fails when redis-server is missing.
func Start(tb testing.TB, n int, extraArgs ...string) *Cluster {
	tb.Helper()
	if !Available() {
		tb.Fatalf("redistest: %s not found; install it with: apt-get install -y redis-server", Binary())
	}
	c := &Cluster{}
	for i := 0; i < n; i++ {
		nd := &Node{tb: tb, Port: FreePort(tb), Args: extraArgs, dir: tb.TempDir()}
		nd.Start()
		c.Nodes = append(c.Nodes, nd)
	}
	tb.Cleanup(c.stop)
	return c
}

// StartMain launches one node per port for a TestMain, where there is no
// testing.TB (runnable examples need fixed addresses). Call Stop when done.
// It panics if a node cannot start, which fails the test binary.
func StartMain(ports ...int) *Cluster {
	c := &Cluster{}
	for _, p := range ports {
		dir, err := os.MkdirTemp("", "redistest")
		if err != nil {
			panic(err)
		}
		nd := &Node{Port: p, dir: dir}
		nd.Start()
		c.Nodes = append(c.Nodes, nd)
	}
	return c
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

// FreePort asks the kernel for a free loopback TCP port.
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("redistest: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
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
	return n.cmd != nil
}

// Start launches the process (again, after Kill) on the same port and waits
// until it answers PING.
func (n *Node) Start() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		n.fatalf("redistest: node %s already running", n.Addr())
	}
	args := append([]string{
		"--port", strconv.Itoa(n.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "no",
		"--daemonize", "no", "--loglevel", "warning", "--dir", n.dir,
	}, n.Args...)
	cmd := exec.Command(Binary(), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		n.fatalf("redistest: start %s: %v", Binary(), err)
	}
	var logMu sync.Mutex
	var logLines []string
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logMu.Lock()
			logLines = append(logLines, sc.Text())
			logMu.Unlock()
		}
	}()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	if err := waitReady(n.Addr(), exited); err != nil {
		_ = cmd.Process.Kill()
		<-exited
		logMu.Lock()
		defer logMu.Unlock()
		n.fatalf("redistest: redis-server on %s not ready: %v\n%s", n.Addr(), err, strings.Join(logLines, "\n"))
	}
	n.cmd, n.exited = cmd, exited
}

func waitReady(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("process exited")
		default:
		}
		c, err := redis.Dial("tcp", addr, redis.DialConnectTimeout(200*time.Millisecond), redis.DialReadTimeout(time.Second))
		if err == nil {
			_, err = c.Do("PING")
			c.Close()
			if err == nil {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no PONG within 10s")
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
	if n.cmd == nil {
		return
	}
	_ = syscall.Kill(n.cmd.Process.Pid, syscall.SIGCONT)
	_ = n.cmd.Process.Kill()
	<-n.exited
	n.cmd = nil
}

// Pause freezes the process with SIGSTOP: connections stay open and hang.
func (n *Node) Pause() { n.signal(syscall.SIGSTOP) }

// Resume continues a paused process with SIGCONT.
func (n *Node) Resume() { n.signal(syscall.SIGCONT) }

func (n *Node) signal(sig syscall.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		n.fatalf("redistest: node %s is not running", n.Addr())
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
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
