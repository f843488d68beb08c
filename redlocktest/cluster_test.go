package redlocktest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	dc "github.com/ory/dockertest/v3/docker"
	"go.uber.org/goleak"

	"github.com/redlockplus/redlock/internal/testkit/clockshim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// backends returns the backends to test, skipping a subtest for one that is
// not available here (CI has both).
func backendAvailable(t *testing.T, b Backend) {
	t.Helper()
	switch b {
	case BackendDocker:
		pool, err := dockerPool()
		if err != nil {
			t.Skipf("docker backend not available: %v", err)
		}
		closeDockerClient(pool)
	case BackendProcess:
		if _, err := lookRedisServer(newConfig(nil).redisServer); err != nil {
			t.Skipf("process backend not available: %v", err)
		}
	}
}

var allBackends = []Backend{BackendDocker, BackendProcess}

// do runs one command on node i with a deadline.
func do(c *Cluster, i int, timeout time.Duration, cmd string, args ...any) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := c.pools[i].GetContext(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return redis.DoContext(conn, ctx, cmd, args...)
}

func mustDo(t *testing.T, c *Cluster, i int, cmd string, args ...any) any {
	t.Helper()
	v, err := do(c, i, 5*time.Second, cmd, args...)
	if err != nil {
		t.Fatalf("%s on node %d: %v", cmd, i, err)
	}
	return v
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// TestFaults exercises every fault primitive on both backends, on a
// two-node cluster whose node 1 must stay unaffected by faults on node 0.
func TestFaults(t *testing.T) {
	for _, b := range allBackends {
		t.Run(string(b), func(t *testing.T) {
			backendAvailable(t, b)
			c := Start(t, 2, WithBackend(b))
			if c.Backend() != b || c.Len() != 2 {
				t.Fatalf("Backend() = %q, Len() = %d; want %q, 2", c.Backend(), c.Len(), b)
			}
			urls := c.URLs()
			for i, u := range urls {
				if u != "redis://"+c.Addrs()[i] {
					t.Fatalf("URLs()[%d] = %q does not match Addrs()[%d] = %q", i, u, i, c.Addrs()[i])
				}
			}
			mustDo(t, c, 0, "SET", "k", "v0")
			if v, _ := redis.String(mustDo(t, c, 0, "GET", "k"), nil); v != "v0" {
				t.Fatalf("GET k on node 0 = %q, want v0", v)
			}
			if v := mustDo(t, c, 1, "GET", "k"); v != nil {
				t.Fatalf("nodes are not independent: node 1 has k = %v", v)
			}

			t.Run("KillRestart", func(t *testing.T) {
				before := c.NewClient()
				c.Kill(0)
				c.Kill(0) // idempotent
				after := c.NewClient()
				// A killed node refuses connections, as a dead host does,
				// through the cluster's pools and every Client's.
				_, err := do(c, 0, 3*time.Second, "PING")
				if !errors.Is(err, syscall.ECONNREFUSED) {
					t.Fatalf("PING on a killed node: %v, want connection refused", err)
				}
				for _, cl := range []*Client{before, after} {
					_, err := redis.DialContext(context.Background(), "tcp", cl.proxies[0].addr)
					if !errors.Is(err, syscall.ECONNREFUSED) {
						t.Fatalf("dialling a killed node through %s: %v, want connection refused", cl.name, err)
					}
				}
				mustDo(t, c, 1, "PING")
				c.Restart(0)
				for _, cl := range []*Client{before, after} {
					conn, err := redis.DialContext(context.Background(), "tcp", cl.proxies[0].addr, redis.DialReadTimeout(5*time.Second))
					if err != nil {
						t.Fatalf("dialling a restarted node through %s: %v", cl.name, err)
					}
					_, err = conn.Do("PING")
					conn.Close()
					if err != nil {
						t.Fatalf("PING on a restarted node through %s: %v", cl.name, err)
					}
				}
				if c.URLs()[0] != urls[0] {
					t.Fatalf("address changed across Restart: %s -> %s", urls[0], c.URLs()[0])
				}
				// The pool may hold a connection broken by the kill; a fresh
				// one must work.
				var v any
				for try := 0; try < 3; try++ {
					if v, err = do(c, 0, 3*time.Second, "GET", "k"); err == nil {
						break
					}
				}
				if err != nil || v != nil {
					t.Fatalf("GET k after a restart without persistence = %v, %v; want nil, nil", v, err)
				}
				c.Restart(0) // a running node: crash and reboot
				mustDo(t, c, 0, "PING")
			})

			t.Run("PauseUnpause", func(t *testing.T) {
				mustDo(t, c, 0, "SET", "p", "1")
				c.Pause(0)
				c.Pause(0) // idempotent
				_, err := do(c, 0, 300*time.Millisecond, "GET", "p")
				if !isTimeout(err) {
					t.Fatalf("GET on a paused node: %v, want a timeout", err)
				}
				mustDo(t, c, 1, "PING")
				c.Unpause(0)
				c.Unpause(0) // idempotent
				if v, _ := redis.String(mustDo(t, c, 0, "GET", "p"), nil); v != "1" {
					t.Fatalf("GET p after Unpause = %q, want 1", v)
				}
			})

			t.Run("PartitionHeal", func(t *testing.T) {
				ctx := context.Background()
				open, err := c.pools[0].GetContext(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer open.Close()
				if _, err := open.Do("PING"); err != nil {
					t.Fatal(err)
				}
				// A connection that loses a command to the partition is reset
				// when it heals, not carried on past the gap.
				raw, err := net.Dial("tcp", c.Addrs()[0])
				if err != nil {
					t.Fatal(err)
				}
				defer raw.Close()
				rd := bufio.NewReader(raw)
				if _, err := raw.Write([]byte("PING\r\n")); err != nil {
					t.Fatal(err)
				}
				if line, err := rd.ReadString('\n'); err != nil || line != "+PONG\r\n" {
					t.Fatalf("PING on a raw connection: %q, %v", line, err)
				}
				c.Partition(0)
				c.Partition(0) // idempotent
				if _, err := raw.Write([]byte("SET part 1\r\n")); err != nil {
					t.Fatal(err)
				}
				tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				_, err = redis.DoContext(open, tctx, "SET", "part", "1")
				cancel()
				if !isTimeout(err) {
					t.Fatalf("SET on an open connection to a partitioned node: %v, want a timeout", err)
				}
				if _, err := do(c, 0, 300*time.Millisecond, "PING"); !isTimeout(err) {
					t.Fatalf("PING on a new connection to a partitioned node: %v, want a timeout", err)
				}
				mustDo(t, c, 1, "PING")
				c.Heal(0)
				mustDo(t, c, 0, "PING")
				if v := mustDo(t, c, 0, "GET", "part"); v != nil {
					t.Fatalf("a command sent during the partition reached the node: part = %v", v)
				}
				_, _ = raw.Write([]byte("PING\r\n")) // fails or is lost: the connection is reset
				_ = raw.SetReadDeadline(time.Now().Add(2 * time.Second))
				if line, err := rd.ReadString('\n'); err == nil {
					t.Fatalf("the connection that lost its SET to the partition answered %q after Heal, as if to the SET", line)
				} else if isTimeout(err) {
					t.Fatalf("the connection that lost its SET to the partition hangs after Heal: %v", err)
				}
			})

			t.Run("Delay", func(t *testing.T) {
				const d = 300 * time.Millisecond
				mustDo(t, c, 0, "PING")
				c.Delay(0, d)
				start := time.Now()
				mustDo(t, c, 0, "PING")
				if got := time.Since(start); got < d {
					t.Fatalf("PING with a %v delay took %v", d, got)
				}
				start = time.Now()
				mustDo(t, c, 1, "PING")
				if got := time.Since(start); got >= d {
					t.Fatalf("node 1 is delayed too: PING took %v", got)
				}
				c.Delay(0, 2*d) // replaces
				start = time.Now()
				mustDo(t, c, 0, "PING")
				if got := time.Since(start); got < 2*d {
					t.Fatalf("PING with a %v delay took %v", 2*d, got)
				}
				// Clients that give up before their delayed replies arrive
				// leave nothing running behind them (TestMain checks).
				for k := 0; k < 5; k++ {
					if _, err := do(c, 0, 50*time.Millisecond, "PING"); !isTimeout(err) {
						t.Fatalf("PING with a 50ms deadline and a %v delay: %v, want a timeout", 2*d, err)
					}
				}
				c.Delay(0, 0)
			})

			t.Run("Client", func(t *testing.T) {
				cl := c.NewClient()
				if len(cl.Pools()) != 2 || cl.URLs()[0] == c.URLs()[0] {
					t.Fatalf("client URLs %v must differ from the cluster's %v", cl.URLs(), c.URLs())
				}
				cdo := func(i int, timeout time.Duration, cmd string, args ...any) (any, error) {
					ctx, cancel := context.WithTimeout(context.Background(), timeout)
					defer cancel()
					conn, err := cl.Pools()[i].GetContext(ctx)
					if err != nil {
						return nil, err
					}
					defer conn.Close()
					return redis.DoContext(conn, ctx, cmd, args...)
				}
				if _, err := cdo(0, 5*time.Second, "SET", "client", "x"); err != nil {
					t.Fatal(err)
				}
				cl.Partition(0)
				if _, err := cdo(0, 300*time.Millisecond, "PING"); !isTimeout(err) {
					t.Fatalf("PING from a client partitioned from node 0: %v, want a timeout", err)
				}
				if v, _ := redis.String(mustDo(t, c, 0, "GET", "client"), nil); v != "x" {
					t.Fatalf("the cluster's own path to node 0 is cut too: GET = %q", v)
				}
				cl.Heal(0)
				c.Restart(0) // the client's proxy follows the node
				var err error
				for try := 0; try < 3; try++ {
					if _, err = cdo(0, 3*time.Second, "PING"); err == nil {
						break
					}
				}
				if err != nil {
					t.Fatalf("client PING after Restart: %v", err)
				}
				cl.Delay(1, 300*time.Millisecond)
				start := time.Now()
				if _, err := cdo(1, 5*time.Second, "PING"); err != nil || time.Since(start) < 300*time.Millisecond {
					t.Fatalf("client PING with a 300ms delay: %v after %v", err, time.Since(start))
				}
				cl.Heal(1)
			})

			t.Run("CutReplies", func(t *testing.T) {
				c.CutReplies(0)
				_, err := do(c, 0, 3*time.Second, "SET", "cut", "ran")
				if err == nil {
					t.Fatal("SET with cut replies succeeded")
				}
				c.Heal(0)
				var v any
				for try := 0; try < 3; try++ {
					if v, err = do(c, 0, 3*time.Second, "GET", "cut"); err == nil {
						break
					}
				}
				if s, _ := redis.String(v, err); s != "ran" {
					t.Fatalf("GET cut after Heal = %v, %v; want the SET to have run", v, err)
				}
			})
		})
	}
}

// TestPersistence: with WithPersistence a node keeps its keys across a kill.
func TestPersistence(t *testing.T) {
	for _, b := range allBackends {
		t.Run(string(b), func(t *testing.T) {
			backendAvailable(t, b)
			c := Start(t, 1, WithBackend(b), WithPersistence(true))
			mustDo(t, c, 0, "SET", "durable", "yes")
			c.Kill(0)
			c.Restart(0)
			var v any
			var err error
			for try := 0; try < 3; try++ {
				if v, err = do(c, 0, 3*time.Second, "GET", "durable"); err == nil {
					break
				}
			}
			if s, _ := redis.String(v, err); s != "yes" {
				t.Fatalf("GET durable after a restart with persistence = %v, %v", v, err)
			}
		})
	}
}

// TestClockShim: on both backends, a node started WithClockShim follows
// the offset SetClockOffset gives it while it runs (TIME, and a key whose
// TTL the step passes expires at once) and keeps it across a restart; the
// node on the real clock is not moved.
func TestClockShim(t *testing.T) {
	for _, b := range allBackends {
		t.Run(string(b), func(t *testing.T) {
			backendAvailable(t, b)
			c := Start(t, 2, WithBackend(b), WithClockShim(1))
			offset := func(i int) time.Duration {
				t.Helper()
				d, err := clockOffset(c.proxies[i].target())
				if err != nil {
					t.Fatalf("TIME on node %d: %v", i, err)
				}
				return d
			}
			near := func(i int, want time.Duration) {
				t.Helper()
				if got := offset(i); got < want-time.Second || got > want+time.Second {
					t.Fatalf("node %d's clock is %v off the real one, want %v", i, got.Round(time.Millisecond), want)
				}
			}
			near(1, 0)
			for i := range 2 {
				mustDo(t, c, i, "SET", "k", "v", "PX", 60000)
			}
			c.SetClockOffset(1, 2*time.Minute)
			near(1, 2*time.Minute)
			near(0, 0)
			if v := mustDo(t, c, 1, "GET", "k"); v != nil {
				t.Fatalf("a 60 s key survived a +2 min step: %v", v)
			}
			if v := mustDo(t, c, 0, "GET", "k"); v == nil {
				t.Fatal("node 0, on the real clock, lost its key to node 1's step")
			}
			c.Restart(1)
			near(1, 2*time.Minute)
			c.SetClockOffset(1, -time.Minute)
			near(1, -time.Minute)
			c.SetClockOffset(1, 0)
			near(1, 0)
		})
	}
}

// TestNothingLeaks: after a cluster's test ends, its containers, network and
// processes are gone.
func TestNothingLeaks(t *testing.T) {
	for _, b := range allBackends {
		t.Run(string(b), func(t *testing.T) {
			backendAvailable(t, b)
			var c *Cluster
			t.Run("cluster", func(t *testing.T) {
				c = Start(t, 2, WithBackend(b))
				c.Pause(1) // must not stop the cleanup
			})
			for i, a := range c.Addrs() {
				if conn, err := net.DialTimeout("tcp", a, time.Second); err == nil {
					conn.Close()
					t.Errorf("proxy of node %d still accepts connections on %s", i, a)
				}
			}
			switch be := c.backend.(type) {
			case *processBackend:
				for i, n := range be.nodes {
					if !processGone(n.proc.Pid) {
						t.Errorf("redis-server of node %d (process %d) still runs", i, n.proc.Pid)
					}
				}
			case *dockerBackend:
				pool, err := dockerPool()
				if err != nil {
					t.Fatal(err)
				}
				defer closeDockerClient(pool)
				f := map[string][]string{"label": {labelPID + "=" + strconv.Itoa(os.Getpid())}}
				cs, err := pool.Client.ListContainers(dc.ListContainersOptions{All: true, Filters: f})
				if err != nil {
					t.Fatal(err)
				}
				for _, ct := range cs {
					if strings.Contains(strings.Join(ct.Names, ","), be.id) {
						t.Errorf("container %v left behind", ct.Names)
					}
				}
				if _, err := pool.Client.NetworkInfo(be.network.Network.ID); err == nil {
					t.Errorf("network %s left behind", be.network.Network.Name)
				}
			}
		})
	}
}

// TestBackendFromEnv: REDLOCKTEST_BACKEND selects the backend.
func TestBackendFromEnv(t *testing.T) {
	backendAvailable(t, BackendProcess)
	t.Setenv(EnvBackend, string(BackendProcess))
	c := Start(t, 1)
	if c.Backend() != BackendProcess {
		t.Fatalf("Backend() = %q with %s=process", c.Backend(), EnvBackend)
	}
	mustDo(t, c, 0, "PING")
}

// fakeTB records what a helper reports instead of ending the test; Fatalf
// and Skipf end the goroutine that called them, as the real ones do.
type fakeTB struct {
	testing.TB
	mu      sync.Mutex
	fatal   string
	skipped string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.mu.Lock()
	f.skipped = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

// run calls fn in a goroutine of its own, so that Fatalf can end it.
func (f *fakeTB) run(fn func()) {
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	<-done
}

// TestHelpersFail: each misuse fails the test with a message that says what
// went wrong.
func TestHelpersFail(t *testing.T) {
	backendAvailable(t, BackendProcess)
	c := Start(t, 2, WithBackend(BackendProcess))
	cases := []struct {
		name string
		fn   func(tb *fakeTB)
		want string
	}{
		{"no nodes", func(tb *fakeTB) { Start(tb, 0) }, "at least 1 node"},
		{"unknown backend", func(tb *fakeTB) { Start(tb, 1, WithBackend("vm")) }, `unknown backend "vm"`},
		{"bad start timeout", func(tb *fakeTB) { Start(tb, 1, WithStartTimeout(-time.Second)) }, "start timeout"},
		{"missing binary", func(tb *fakeTB) {
			Start(tb, 1, WithBackend(BackendProcess), func(c *config) { c.redisServer = "/nonexistent/redis-server" })
		}, "apt-get install redis-server"},
		{"kill out of range", func(tb *fakeTB) { withTB(c, tb).Kill(2) }, "Kill(2): no such node"},
		{"negative index", func(tb *fakeTB) { withTB(c, tb).Partition(-1) }, "Partition(-1): no such node"},
		{"negative delay", func(tb *fakeTB) { withTB(c, tb).Delay(0, -time.Second) }, "negative delay"},
		{"clock shim on no such node", func(tb *fakeTB) { Start(tb, 1, WithBackend(BackendProcess), WithClockShim(1)) }, "WithClockShim(1): no such node"},
		{"step a real clock", func(tb *fakeTB) { withTB(c, tb).SetClockOffset(0, time.Second) }, "start the cluster WithClockShim(0)"},
		{"clock shim not in effect", func(tb *fakeTB) {
			cc := withTB(c, tb)
			cc.clocks = []*clockshim.Clock{clockshim.New(t), nil} // a node started without it
			cc.SetClockOffset(0, time.Minute)
		}, "the clock shim is not in effect"},
		{"pause a killed node", func(tb *fakeTB) {
			cc := withTB(c, tb)
			cc.Kill(1)
			cc.Pause(1)
		}, "Restart it first"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb := &fakeTB{TB: t}
			tb.run(func() { tc.fn(tb) })
			if !strings.Contains(tb.fatal, tc.want) || !strings.HasPrefix(tb.fatal, "redlocktest: ") {
				t.Fatalf("failure message %q; want it to start with redlocktest: and contain %q", tb.fatal, tc.want)
			}
		})
	}
	c.Restart(1)
	mustDo(t, c, 1, "PING")
}

// withTB returns a view of c that reports to tb; it shares c's nodes.
func withTB(c *Cluster, tb testing.TB) *Cluster {
	return &Cluster{tb: tb, backend: c.backend, proxies: c.proxies, pools: c.pools, gens: c.gens, state: c.state, clocks: c.clocks}
}

// TestSkipWhenNothingAvailable: with no Docker engine and no redis-server,
// the auto backend skips the test and says what to install.
func TestSkipWhenNothingAvailable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	t.Setenv(EnvRedisServer, "/nonexistent/redis-server")
	t.Setenv(EnvBackend, "")
	tb := &fakeTB{TB: t}
	tb.run(func() { Start(tb, 3) })
	if tb.fatal != "" {
		t.Fatalf("failed instead of skipping: %s", tb.fatal)
	}
	for _, want := range []string{"Install Docker", "apt-get install redis-server"} {
		if !strings.Contains(tb.skipped, want) {
			t.Fatalf("skip message %q does not say %q", tb.skipped, want)
		}
	}
}

func TestSplitImage(t *testing.T) {
	for _, tc := range []struct{ in, repo, tag string }{
		{"redis:7", "redis", "7"},
		{"redis", "redis", "latest"},
		{"localhost:5000/redis", "localhost:5000/redis", "latest"},
		{"localhost:5000/team/redis:7.2", "localhost:5000/team/redis", "7.2"},
	} {
		if r, g := splitImage(tc.in); r != tc.repo || g != tc.tag {
			t.Errorf("splitImage(%q) = %q, %q; want %q, %q", tc.in, r, g, tc.repo, tc.tag)
		}
	}
}

func TestParseLdd(t *testing.T) {
	out := []byte(`	linux-vdso.so.1 (0x00007ffd)
	libm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f4f)
	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f4f)
	/lib64/ld-linux-x86-64.so.2 (0x00007f4f)
`)
	got, err := parseLdd(out)
	want := []string{"/lib/x86_64-linux-gnu/libm.so.6", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}
	if err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("parseLdd = %v, %v; want %v", got, err, want)
	}
	if _, err := parseLdd([]byte("\tlibfoo.so.1 => not found\n")); err == nil || !strings.Contains(err.Error(), "libfoo.so.1") {
		t.Fatalf("a missing library gave %v", err)
	}
	if _, err := parseLdd([]byte("\tnot a dynamic executable\n")); err == nil {
		t.Fatal("a static binary gave no error")
	}
}

// TestLocalImageFallback: an image that is neither present nor pullable is
// replaced by one built from the local redis-server, which then runs.
func TestLocalImageFallback(t *testing.T) {
	backendAvailable(t, BackendDocker)
	backendAvailable(t, BackendProcess) // the build needs the binary
	name, err := BuildLocalImage()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(name, LocalImageRepository+":") {
		t.Fatalf("BuildLocalImage() = %q", name)
	}
	pool, err := dockerPool()
	if err != nil {
		t.Fatal(err)
	}
	defer closeDockerClient(pool)
	img, note, err := ensureImage(pool, newConfig([]Option{WithImage("redlocktest-absent/redis:0")}))
	if err != nil || img != name || !strings.Contains(note, "could not be pulled") {
		t.Fatalf("ensureImage(absent) = %q, %q, %v; want %q with a note", img, note, err, name)
	}
	c := Start(t, 1, WithBackend(BackendDocker), WithImage("redlocktest-absent/redis:0"))
	if s, _ := redis.String(mustDo(t, c, 0, "INFO", "server"), nil); !strings.Contains(s, "redis_version:") {
		t.Fatalf("INFO server from the local image: %q", s)
	}
}
