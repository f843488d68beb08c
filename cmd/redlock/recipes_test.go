package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// testFactory is a factory over the cluster's nodes, as another client.
func testFactory(t *testing.T, c *redistest.Cluster, opts ...redlock.Option) *redlock.Factory {
	t.Helper()
	var pools []redlock.Pool
	for _, p := range c.Pools() {
		pools = append(pools, p)
	}
	f, err := redlock.NewFactory(pools, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestRunPermits starts five `redlock run --permits 2` at once: their
// children's intervals never overlap more than two deep, and each child
// sees the permit it holds.
func TestRunPermits(t *testing.T) {
	c := redistest.Start(t, 3)
	logf := filepath.Join(t.TempDir(), "log")
	script := `echo "S $REDLOCK_PERMIT $(date +%s%N)" >> "$LOG"; sleep 0.3; echo "E $REDLOCK_PERMIT $(date +%s%N)" >> "$LOG"`
	const procs = 5
	var wg sync.WaitGroup
	results := make([]result, procs)
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := append(nodesEnv(c.URLs()), "LOG="+logf)
			results[i] = cli(t, env, "run", "--permits", "2", "--wait", "30s", "--ttl", "5s", "encoders", "--", "sh", "-c", script)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Fatalf("run %d: exit %d, stderr %q", i, r.code, r.stderr)
		}
	}
	data, err := os.ReadFile(logf)
	if err != nil {
		t.Fatal(err)
	}
	type event struct {
		at    int64
		delta int
	}
	var events []event
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || (f[1] != "0" && f[1] != "1") {
			t.Fatalf("bad log line %q (REDLOCK_PERMIT must be 0 or 1)", line)
		}
		at, _ := strconv.ParseInt(f[2], 10, 64)
		d := 1
		if f[0] == "E" {
			d = -1
		}
		events = append(events, event{at, d})
	}
	if len(events) != 2*procs {
		t.Fatalf("log has %d lines, want %d", len(events), 2*procs)
	}
	sort.Slice(events, func(a, b int) bool {
		return events[a].at < events[b].at || events[a].at == events[b].at && events[a].delta < events[b].delta
	})
	depth, most := 0, 0
	for _, e := range events {
		depth += e.delta
		most = max(most, depth)
	}
	if most != 2 {
		t.Fatalf("at most %d children ran at once, want 2", most)
	}
}

// TestRunPermitsExitCodes: a full semaphore with --no-wait exits 75, and
// --permits below 1 is a usage error.
func TestRunPermitsExitCodes(t *testing.T) {
	c := redistest.Start(t, 3)
	f := testFactory(t, c, redlock.WithTTL(30*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	held := f.NewSemaphore("full", 1)
	if _, err := held.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	env := nodesEnv(c.URLs())
	r := cli(t, env, "run", "--permits", "1", "--no-wait", "full", "--", "true")
	if r.code != exitNotAcquired || !strings.Contains(r.stderr, `no permit of semaphore "full"`) {
		t.Fatalf("full semaphore: exit %d, stderr %q; want %d and a message", r.code, r.stderr, exitNotAcquired)
	}
	if r := cli(t, env, "run", "--permits", "0", "x", "--", "true"); r.code != exitUsage {
		t.Fatalf("--permits 0: exit %d, stderr %q; want %d", r.code, r.stderr, exitUsage)
	}
	held.Release(ctx)
	if r := cli(t, env, "run", "--permits", "1", "--no-wait", "full", "--", "sh", "-c", "exit 7"); r.code != 7 {
		t.Fatalf("free permit: exit %d, stderr %q; want the command's 7", r.code, r.stderr)
	}
}

// TestElect: the command runs while leading, the value is the leader's,
// and redlock resigns when the command exits.
func TestElect(t *testing.T) {
	c := redistest.Start(t, 3)
	f := testFactory(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	watcher := f.NewElection("boss")
	done := make(chan result, 1)
	go func() {
		done <- cli(t, nodesEnv(c.URLs()), "elect", "--value", "host-a", "boss", "--", "sh", "-c", `echo "$REDLOCK_VALUE"; sleep 1`)
	}()
	waitFor(t, 10*time.Second, "host-a leading", func() bool {
		v, err := watcher.Leader(ctx)
		return err == nil && v == "host-a"
	})
	r := <-done
	if r.code != 0 || strings.TrimSpace(r.stdout) != "host-a" {
		t.Fatalf("elect: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if _, err := watcher.Leader(ctx); !errors.Is(err, redlock.ErrNoLeader) {
		t.Fatalf("Leader after the command = %v, want ErrNoLeader (resigned)", err)
	}
	if r := cli(t, nodesEnv(c.URLs()), "elect", "boss", "--", "true"); r.code != exitUsage {
		t.Fatalf("elect without --value: exit %d, want %d", r.code, exitUsage)
	}
}

// TestElectLoss deletes the leader's key: the command is stopped and
// redlock exits 76.
func TestElectLoss(t *testing.T) {
	c := redistest.Start(t, 3)
	f := testFactory(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	watcher := f.NewElection("fragile")
	done := make(chan result, 1)
	go func() {
		done <- cli(t, nodesEnv(c.URLs()), "elect", "--ttl", "1s", "--kill-grace", "1s", "--value", "me", "fragile", "--", "sleep", "30")
	}()
	waitFor(t, 10*time.Second, "me leading", func() bool {
		v, err := watcher.Leader(ctx)
		return err == nil && v == "me"
	})
	for _, n := range c.Nodes {
		n.Do("DEL", "fragile")
	}
	select {
	case r := <-done:
		if r.code != exitLockLost || !strings.Contains(r.stderr, "lost") {
			t.Fatalf("elect after loss: exit %d, stderr %q; want %d", r.code, r.stderr, exitLockLost)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the command was not stopped after the leadership was lost")
	}
}
