package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/clockshim"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// guardPaths are the factory transports the guard tests run over: the
// pipelined connections (the connection names the server's process) and
// the pool path (LASTSAVE in the vote's script names it).
var guardPaths = []struct {
	name string
	opts []redlock.Option
}{
	{"pipelined", nil},
	{"pool", []redlock.Option{redlock.WithPipelining(false)}},
}

// guardTTL leaves the checks inside a holder's validity room on a loaded machine.
const guardTTL = 5 * time.Second

// guardFactory returns a factory over pools with the path's options, opts
// and one attempt per TryAcquire.
func guardFactory(t *testing.T, pools []redlock.Pool, path []redlock.Option, opts ...redlock.Option) *redlock.Factory {
	t.Helper()
	all := append(append([]redlock.Option{redlock.WithTTL(guardTTL), redlock.WithRetryTimes(0), redlock.WithAutoextend(false)}, path...), opts...)
	f, err := redlock.NewFactory(pools, all...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// onBareQuorum has a holder take name on nodes 0, 1 and 2 of five only:
// nodes 3 and 4 hold a foreign key under the name, which then expires.
// It returns the end of the holder's validity. The holder's factory runs
// without loss detection: with it, the holder would learn of the fault,
// end its holding and delete its keys, and the test would prove nothing
// about a holder that has not heard.
func onBareQuorum(t *testing.T, c *redistest.Cluster, f *redlock.Factory, name string) time.Time {
	t.Helper()
	var start time.Time
	var v time.Duration
	err := untilHeard(func() (err error) {
		for _, i := range []int{3, 4} {
			c.Nodes[i].Do("SET", name, "foreign", "PX", 300)
		}
		start = time.Now()
		v, err = f.NewLock(name).TryAcquire(ctxT(t, 10*time.Second))
		return err
	}, func() {
		waitFor(t, 2*time.Second, "the failed attempt's keys to go", func() bool {
			return rawGet(t, c, 0, name) == "" && rawGet(t, c, 1, name) == "" && rawGet(t, c, 2, name) == ""
		})
	})
	if err != nil {
		t.Fatalf("holder on nodes 0-2: %v", err)
	}
	waitFor(t, 5*time.Second, "the foreign keys to expire", func() bool {
		return rawGet(t, c, 3, name) == "" && rawGet(t, c, 4, name) == ""
	})
	return start.Add(v)
}

// warm makes f dial every node, so that it is a client connected before a
// fault.
func warm(t *testing.T, f *redlock.Factory) {
	t.Helper()
	l := f.NewLock("warm:" + t.Name())
	if _, err := l.TryAcquire(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
}

// mustNotTake asserts that a second client cannot take name while the
// holder's validity lasts, and that the node guard said why. A client
// connected before a restart may first fail on its broken connections to
// the node (EOF): on the pool path each idle connection of the pool
// (the probe's, the warm-up's) fails once. An attempt may also give up on
// node 0 before it answers (ErrContested: nodes 1 and 2 refused it), as
// when its connection is dialled again. Its next attempts, once the failed
// ones' keys on nodes 3 and 4 are discarded, must meet the guard.
func mustNotTake(t *testing.T, c *redistest.Cluster, who string, f *redlock.Factory, name string, until time.Time) {
	t.Helper()
	var err error
	for try := 0; try < 5; try++ {
		discarded(t, c, name)
		_, err = f.NewLock(name).TryAcquire(ctxT(t, 10*time.Second))
		if err == nil || errors.Is(err, redlock.ErrNotVoting) {
			break
		}
		if !strings.Contains(err.Error(), "EOF") && !errors.Is(err, redlock.ErrContested) {
			break
		}
	}
	if time.Now().After(until) {
		t.Fatalf("%s: the attempt ended after the holder's validity; the test proves nothing", who)
	}
	if err == nil {
		t.Fatalf("%s acquired the lock inside the holder's validity: two holders", who)
	}
	if !errors.Is(err, redlock.ErrNotVoting) {
		t.Fatalf("%s: %v, want a node out of the vote (ErrNotVoting)", who, err)
	}
}

// discarded waits until the keys of earlier failed attempts on name are
// gone from the nodes outside the holder's (0 and 3-4). Their deletes may
// still be on their way (the pool path's cleaners): an attempt that met
// them would be refused early, before the guard, or the fault in a
// negative control, had its say.
func discarded(t *testing.T, c *redistest.Cluster, name string) {
	t.Helper()
	waitFor(t, 2*time.Second, "earlier attempts' keys to go", func() bool {
		return rawGet(t, c, 0, name) == "" && rawGet(t, c, 3, name) == "" && rawGet(t, c, 4, name) == ""
	})
}

// mayTake asserts the negative control: with the guard off, the fault lets
// a second client in while the holder's validity lasts. Its attempt must
// hear node 0 (untilHeard).
func mayTake(t *testing.T, c *redistest.Cluster, f *redlock.Factory, name string, until time.Time) {
	t.Helper()
	discarded(t, c, name)
	err := untilHeard(func() error {
		_, err := f.NewLock(name).TryAcquire(ctxT(t, 10*time.Second))
		return err
	}, func() { discarded(t, c, name) })
	if err != nil || time.Now().After(until) {
		t.Fatalf("negative control: with the guard off the fault should let a second holder in inside the first's validity; got %v", err)
	}
}

// guardedFault puts a holder of name on nodes 0-2 of c, injects fault on
// node 0, and checks that neither a client connected before the fault nor
// a fresh one can take name inside the holder's validity, while a client
// with the guard off (off) can: the negative control.
func guardedFault(t *testing.T, c *redistest.Cluster, pools []redlock.Pool, path []redlock.Option, name string, fault func(), off redlock.Option) {
	t.Helper()
	holder := guardFactory(t, pools, path, redlock.WithLossDetection(false))
	connected := guardFactory(t, pools, path)
	warm(t, connected)
	until := onBareQuorum(t, c, holder, name)
	fault()
	mustNotTake(t, c, "a client connected before the fault", connected, name, until)
	mustNotTake(t, c, "a fresh client", guardFactory(t, pools, path), name, until)
	mayTake(t, c, guardFactory(t, pools, path, off), name, until)
}

// TestRestartGuard: a node restarted empty, on the bare quorum of a
// holder, does not vote for a fresh client or for one connected before the
// restart while the holder's validity lasts; with the guard off it lets a
// second holder in.
func TestRestartGuard(t *testing.T) {
	for _, path := range guardPaths {
		t.Run(path.name, func(t *testing.T) {
			c, pools := cluster(t, 5)
			// Node 0 persists nothing. Its first start is a restart to the
			// guard: it votes once it has run for the window (the TTL;
			// uptime is in whole seconds).
			c.Nodes[0].RestartVolatile()
			time.Sleep(guardTTL + 1100*time.Millisecond)
			guardedFault(t, c, pools, path.opts, "rg:lock", func() {
				c.Nodes[0].Kill()
				c.Nodes[0].Start() // at once, empty: the holder's key there is gone
			}, redlock.WithRestartGuard(0))
		})
	}
}

// TestClockGuard: a node of the holder's bare quorum whose clock steps
// forward by more than the TTL (its copy of the key expires at once) does
// not vote for a fresh client or a connected one; a node 5 ms off still
// votes; with the guard off the step lets a second holder in.
func TestClockGuard(t *testing.T) {
	for _, path := range guardPaths {
		t.Run(path.name, func(t *testing.T) {
			c, pools := cluster(t, 5)
			clock := clockshim.New(t)
			c.Nodes[0].Kill()
			c.Nodes[0].Env = clock.Env()
			c.Nodes[0].Start()
			clock.Set(t, 5*time.Millisecond)
			all := guardFactory(t, pools, path.opts, redlock.WithQuorum(5))
			if _, err := all.NewLock("cg:5ms").TryAcquire(ctxT(t, 10*time.Second)); err != nil {
				t.Fatalf("quorum 5 with one node 5 ms off at a TTL of %v: %v", guardTTL, err)
			}
			clock.Set(t, 0)
			guardedFault(t, c, pools, path.opts, "cg:lock", func() {
				clock.Set(t, guardTTL+time.Second)
				if v := rawGet(t, c, 0, "cg:lock"); v != "" {
					t.Fatalf("the step left the holder's key on node 0: %q", v)
				}
			}, redlock.WithClockGuard(0))
		})
	}
}

// TestQuarantinedNodeOperations: on a node the guard keeps out, a
// holding's SET lands but is not counted; Extend and CheckTimes count the
// other nodes; Release deletes there too. The node votes again once it
// has run for the window, and the observer hears it leave and rejoin.
func TestQuarantinedNodeOperations(t *testing.T) {
	for _, path := range guardPaths {
		t.Run(path.name, func(t *testing.T) {
			c, pools := cluster(t, 3)
			c.Nodes[0].RestartVolatile()
			var mu sync.Mutex
			var votes []redlock.NodeVoteEvent
			obs := redlock.Observer{NodeVote: func(e redlock.NodeVoteEvent) {
				mu.Lock()
				votes = append(votes, e)
				mu.Unlock()
			}}
			const window = 2 * time.Second
			f := guardFactory(t, pools, path.opts, redlock.WithRestartGuard(window), redlock.WithObserver(obs))
			ctx := ctxT(t, 30*time.Second)
			l := f.NewLock("q:lock")
			if _, err := l.TryAcquire(ctx); err != nil {
				t.Fatalf("acquire on nodes 1 and 2: %v", err)
			}
			waitFor(t, 5*time.Second, "the SET to land on the quarantined node", func() bool {
				return rawGet(t, c, 0, "q:lock") == l.Token()
			})
			if _, err := l.Extend(ctx); err != nil {
				t.Fatalf("Extend with node 0 out of the vote: %v", err)
			}
			if held, _, err := l.CheckTimes(ctx); err != nil || !held {
				t.Fatalf("CheckTimes with node 0 out of the vote: held %v, %v", held, err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			for i := range c.Nodes { // Release decides at quorum: the last delete may be on its way
				waitFor(t, 5*time.Second, "the released key to go", func() bool { return rawGet(t, c, i, "q:lock") == "" })
			}
			mu.Lock()
			left := len(votes) == 1 && !votes[0].Voting && votes[0].Node == 0 && strings.Contains(votes[0].Why, "restart guard")
			mu.Unlock()
			if !left {
				t.Fatalf("vote events %+v, want node 0 leaving the vote because of the restart guard", votes)
			}
			time.Sleep(window + time.Second) // uptime is in whole seconds
			strict := f.NewLock("q:all", redlock.WithQuorum(3))
			if _, err := strict.TryAcquire(ctx); err != nil {
				t.Fatalf("quorum 3 once node 0 has run for the window: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if n := len(votes); n != 2 || !votes[1].Voting || votes[1].Node != 0 {
				t.Fatalf("vote events %+v, want node 0 leaving, then rejoining", votes)
			}
		})
	}
}

// TestHealth reports each node: a durable one votes; one that restarted
// empty a moment ago does not, and says why; an evicting policy is a risk,
// reported once to the observer; a killed node is unreachable.
func TestHealth(t *testing.T) {
	c, pools := cluster(t, 4)
	c.Nodes[1].RestartVolatile()
	c.Nodes[2].Kill()
	c.Nodes[2].Args = []string{"--maxmemory", "100mb", "--maxmemory-policy", "volatile-lru"}
	c.Nodes[2].Start()
	c.Nodes[3].Kill()
	var mu sync.Mutex
	var risks []redlock.NodeRiskEvent
	obs := redlock.Observer{NodeRisk: func(e redlock.NodeRiskEvent) {
		mu.Lock()
		risks = append(risks, e)
		mu.Unlock()
	}}
	f, err := redlock.NewFactory(pools, redlock.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	hs := mustHealth(t, f)
	if len(hs) != 4 {
		t.Fatalf("%d reports for 4 nodes", len(hs))
	}
	if h := hs[0]; !h.Voting || h.Why != "" || !h.Durable || h.Version == "" || h.RunID == "" || h.RTT <= 0 || h.Err != nil {
		t.Errorf("durable node: %+v, want it voting, durable, with its version, run_id and round trip", h)
	}
	if h := hs[1]; h.Voting || !strings.Contains(h.Why, "restart guard") || h.Durable || !strings.Contains(h.Persistence, "appendonly no") {
		t.Errorf("node restarted empty: %+v, want it out of the vote by the restart guard", h)
	}
	if h := hs[2]; !h.Voting || h.Eviction != "volatile-lru" || !strings.Contains(h.Risk, "volatile-lru") || h.MaxMemory != 100<<20 {
		t.Errorf("evicting node: %+v, want it voting with the volatile-lru risk", h)
	}
	if h := hs[3]; h.Voting || h.Err == nil || !strings.HasPrefix(h.Why, "unreachable") {
		t.Errorf("killed node: %+v, want it unreachable", h)
	}
	if d := hs[0].ClockOffset; d > time.Second || d < -time.Second {
		t.Errorf("clock offset of a local node %v", d)
	}
	mustHealth(t, f)
	mu.Lock()
	defer mu.Unlock()
	if len(risks) != 1 || risks[0].Node != 2 || !strings.Contains(risks[0].Risk, "volatile-lru") {
		t.Errorf("risk events %+v, want one for node 2's volatile-lru", risks)
	}
	f.Close()
	if _, err := f.Health(context.Background()); !errors.Is(err, redlock.ErrClosed) {
		t.Errorf("Health after Close: %v, want ErrClosed", err)
	}
}

// mustHealth returns f's Health, failing the test on an error.
func mustHealth(t *testing.T, f *redlock.Factory) []redlock.NodeHealth {
	t.Helper()
	hs, err := f.Health(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

// TestGuardOptions: a negative window or allowance is an invalid argument,
// and so is either option given to one lock of a factory.
func TestGuardOptions(t *testing.T) {
	_, pools := cluster(t, 3)
	for _, opt := range []redlock.Option{redlock.WithRestartGuard(-time.Second), redlock.WithClockGuard(-time.Millisecond)} {
		if _, err := redlock.NewFactory(pools, opt); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("negative guard option: %v, want ErrInvalidArgument", err)
		}
	}
	f, err := redlock.NewFactory(pools)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	_, err = f.NewLock("opt", redlock.WithClockGuard(0)).TryAcquire(context.Background())
	if !errors.Is(err, redlock.ErrInvalidArgument) || !strings.Contains(err.Error(), "WithClockGuard") {
		t.Errorf("guard option on one lock: %v, want ErrInvalidArgument naming it", err)
	}
}

// TestRestartGuardWholeWindow: INFO's uptime_in_seconds is the difference
// of the wall clock's whole seconds now and at the start, so it reads 1
// when the process may have run only a moment. The restart guard must
// still keep the node out for the whole window from its start: a client
// that first meets the node just after its uptime ticks to 1 votes no
// sooner than the window after the start began.
func TestRestartGuardWholeWindow(t *testing.T) {
	const window = 2 * time.Second
	for _, path := range guardPaths {
		t.Run(path.name, func(t *testing.T) {
			c, pools := cluster(t, 3)
			c.Nodes[0].Args = redistest.Volatile
			began, ticked := restartUntilEarlyTick(t, c.Nodes[0])
			t.Logf("uptime read 1 %v after the start began", ticked.Sub(began).Round(time.Millisecond))
			f := guardFactory(t, pools, path.opts, redlock.WithRestartGuard(window), redlock.WithQuorum(3))
			l := f.NewLock("rg:whole")
			for deadline := time.Now().Add(window + 5*time.Second); ; time.Sleep(10 * time.Millisecond) {
				_, err := l.TryAcquire(ctxT(t, 5*time.Second))
				end := time.Now()
				if err == nil {
					if ran := end.Sub(began); ran < window {
						t.Fatalf("the restarted node voted %v after its start began, within the window of %v", ran, window)
					}
					return
				}
				if !errors.Is(err, redlock.ErrNotVoting) {
					t.Fatalf("attempt: %v, want ErrNotVoting until the node votes", err)
				}
				if end.After(deadline) {
					t.Fatalf("the restarted node did not vote within %v of the window: %v", deadline.Sub(began), err)
				}
			}
		})
	}
}

// restartUntilEarlyTick restarts node late in a second of the wall clock,
// until its uptime_in_seconds reads 1 less than 700 ms after the start
// began, and returns when the start began and when uptime read 1.
func restartUntilEarlyTick(t *testing.T, node *redistest.Node) (began, ticked time.Time) {
	t.Helper()
	for try := 0; try < 10; try++ {
		node.Kill()
		now := time.Now()
		time.Sleep(time.Second - time.Duration(now.Nanosecond()) + 600*time.Millisecond) // to .6 of the next second
		began = time.Now()
		node.Start()
		for {
			info, _ := node.Do("INFO", "server").([]byte)
			ticked = time.Now()
			if strings.Contains(string(info), "uptime_in_seconds:1\r") {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if ticked.Sub(began) < 700*time.Millisecond {
			return began, ticked
		}
	}
	t.Fatal("uptime never read 1 within 700 ms of a start in 10 restarts")
	return
}

// TestHealthDuplicate: a node that is the same server as an earlier one is
// reported as such, not as unreachable, and does not vote.
func TestHealthDuplicate(t *testing.T) {
	c, pools := cluster(t, 3)
	f, err := redlock.NewFactory(append(pools, c.Nodes[1].Pool()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	hs := mustHealth(t, f)
	for i, h := range hs[:3] {
		if !h.Voting || h.Err != nil {
			t.Errorf("node %d: %+v, want it voting", i, h)
		}
	}
	if h := hs[3]; h.Voting || h.Err != nil || !strings.Contains(h.Why, "the same Redis server as node 1") || h.RunID != hs[1].RunID {
		t.Errorf("duplicate of node 1: %+v, want it named the same server as node 1", h)
	}
}
