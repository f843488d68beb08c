//go:build unix

package redisproc

import (
	"errors"
	"net"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m, nil) }

// start starts a redis-server for the test and kills it at cleanup.
func start(t *testing.T, cfg Config) *Process {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found; install it with: apt-get install -y redis-server")
	}
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// assertOwn fails unless the server answering on p's port is p.
func assertOwn(t *testing.T, p *Process) {
	t.Helper()
	id, ready, err := probe(p.Addr())
	if err != nil || !ready {
		t.Fatalf("%s: ready %v, err %v", p.Addr(), ready, err)
	}
	if id.pid != p.Pid || id.runID != p.RunID {
		t.Fatalf("%s is answered by process %d (run %s), want %d (run %s)", p.Addr(), id.pid, id.runID, p.Pid, p.RunID)
	}
}

// withPicker makes Start pick ports with pick for the rest of the test.
func withPicker(t *testing.T, pick func() (int, error)) {
	old := pickPort
	pickPort = pick
	t.Cleanup(func() { pickPort = old })
}

func TestStartedProcessIsTheOneAnswering(t *testing.T) {
	p := start(t, Config{})
	assertOwn(t, p)
	p.Kill()
	if c, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after Kill", p.Addr())
	}
	if err := p.Signal(errSignal{}); err == nil {
		t.Fatal("Signal after Kill succeeded")
	}
}

// errSignal is a signal never delivered: Signal must refuse it first.
type errSignal struct{}

func (errSignal) String() string { return "never" }
func (errSignal) Signal()        {}

func TestRestartOnFixedPortIsANewProcess(t *testing.T) {
	first := start(t, Config{})
	dir := t.TempDir()
	first.Kill()
	again := start(t, Config{Port: first.Port, Dir: dir})
	if again.Port != first.Port {
		t.Fatalf("restarted on port %d, want %d", again.Port, first.Port)
	}
	if again.Pid == first.Pid || again.RunID == first.RunID {
		t.Fatalf("restart kept process %d run %s", again.Pid, again.RunID)
	}
	assertOwn(t, again)
}

// Two harnesses starting nodes at the same time never share one.
func TestConcurrentHarnessesShareNoNode(t *testing.T) {
	const harnesses, nodes = 2, 5
	procs := make([][]*Process, harnesses)
	var wg sync.WaitGroup
	for h := range harnesses {
		wg.Go(func() {
			for range nodes {
				p, err := Start(Config{Dir: t.TempDir()})
				if err != nil {
					t.Error(err)
					return
				}
				procs[h] = append(procs[h], p)
			}
		})
	}
	wg.Wait()
	for _, ps := range procs {
		for _, p := range ps {
			t.Cleanup(p.Kill)
		}
	}
	ports, pids := map[int]bool{}, map[int]bool{}
	for _, ps := range procs {
		for _, p := range ps {
			if ports[p.Port] || pids[p.Pid] {
				t.Errorf("port %d or process %d given to two nodes", p.Port, p.Pid)
			}
			ports[p.Port], pids[p.Pid] = true, true
			assertOwn(t, p)
		}
	}
	if len(ports) != harnesses*nodes {
		t.Fatalf("%d nodes started, want %d", len(ports), harnesses*nodes)
	}
}

// The worst race for a port: every harness picks the same one at once, as
// separate test binaries on one host can. One wins it; the others notice
// and move on, none takes the winner for its own node.
func TestSamePortPickedByAll(t *testing.T) {
	const contenders = 4
	shared, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	withPicker(t, func() (int, error) {
		if calls.Add(1) <= contenders {
			return shared, nil
		}
		return freePort()
	})
	procs := make([]*Process, contenders)
	var wg sync.WaitGroup
	for i := range contenders {
		wg.Go(func() {
			p, err := Start(Config{Dir: t.TempDir()})
			if err != nil {
				t.Error(err)
				return
			}
			procs[i] = p
		})
	}
	wg.Wait()
	for _, p := range procs {
		if p != nil {
			t.Cleanup(p.Kill)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	ports := map[int]bool{}
	for _, p := range procs {
		if ports[p.Port] {
			t.Errorf("port %d given to two nodes", p.Port)
		}
		ports[p.Port] = true
		assertOwn(t, p)
	}
	if calls.Load() <= contenders {
		t.Fatalf("%d picks for %d contenders on one port: no collision was survived", calls.Load(), contenders)
	}
}

// A port taken between the pick and the bind, by a listener that is not
// Redis at all: redis-server cannot bind it, and Start moves on.
func TestPortTakenByAListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go acceptSilently(ln)
	taken := ln.Addr().(*net.TCPAddr).Port
	pickFirst(t, taken)
	p := start(t, Config{})
	if p.Port == taken {
		t.Fatalf("started on the taken port %d", taken)
	}
	assertOwn(t, p)
}

// A port taken by another redis-server, which answers PING like ours
// would: Start must not take it for its own node.
func TestPortTakenByAnotherRedis(t *testing.T) {
	other := start(t, Config{})
	pickFirst(t, other.Port)
	p := start(t, Config{})
	if p.Port == other.Port || p.Pid == other.Pid {
		t.Fatalf("the new node is the other one: port %d, process %d", p.Port, p.Pid)
	}
	assertOwn(t, p)
	assertOwn(t, other)
}

// A fixed port that someone else holds is an ErrPortInUse once Timeout
// passes: Start cannot move a node its clients expect there.
func TestFixedPortTaken(t *testing.T) {
	other := start(t, Config{})
	_, err := Start(Config{Dir: t.TempDir(), Port: other.Port, Timeout: time.Second})
	if !errors.Is(err, ErrPortInUse) {
		t.Fatalf("Start on a taken fixed port: %v, want ErrPortInUse", err)
	}
	assertOwn(t, other)
}

// pickFirst makes the next pick return port, and later ones free ports.
func pickFirst(t *testing.T, port int) {
	var once atomic.Bool
	withPicker(t, func() (int, error) {
		if once.CompareAndSwap(false, true) {
			return port, nil
		}
		return freePort()
	})
}

// acceptSilently accepts connections and never answers, until ln closes.
func acceptSilently(ln net.Listener) {
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		held = append(held, c)
	}
}
