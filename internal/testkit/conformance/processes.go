package conformance

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// Mutual exclusion across processes: the test binary runs again as child
// processes, each a contender with a client of its own, and a witness
// redis-server apart from the lock's nodes sees every holding. A holder
// INCRs the witness's "inside" key and must read 1, then DECRs it; a reading
// above 1 counts in "overlaps". Each child also records there the client it
// used and how many times it held the lock. The children learn their part from the
// environment below, and Run, which they enter through the same test,
// sends them to processChild instead of the suite.
const (
	envChild   = "REDLOCK_CONFORMANCE_CHILD"   // the child's index
	envClient  = "REDLOCK_CONFORMANCE_CLIENT"  // the Name of the Client it takes the lock with
	envNodes   = "REDLOCK_CONFORMANCE_NODES"   // the lock's nodes, host:port, comma-separated
	envWitness = "REDLOCK_CONFORMANCE_WITNESS" // the witness server, host:port
	envRounds  = "REDLOCK_CONFORMANCE_ROUNDS"  // holdings per child
	envTotal   = "REDLOCK_CONFORMANCE_TOTAL"   // children in all, for the start barrier
)

// processLock is the name the children contend for.
const processLock = "processes"

// childTimeout bounds a child, so that a hung one fails the case instead
// of the run.
const childTimeout = 2 * time.Minute

// isChild reports whether this process is a child of processes.
func isChild() bool { return os.Getenv(envChild) != "" }

// runPattern is the -test.run pattern that selects exactly the test named
// name (a t.Name(), its levels separated by '/').
func runPattern(name string) string {
	levels := strings.Split(name, "/")
	for i, l := range levels {
		levels[i] = "^" + regexp.QuoteMeta(l) + "$"
	}
	return strings.Join(levels, "/")
}

// processes runs one child process per client, all contending for one
// lock on 3 nodes; test is the name of the test that calls Run, which the
// children run again. It fails on any overlap seen by the witness, on a
// child that fails, and on a child that did not complete every holding.
func processes(t *testing.T, test string, clients ...Client) {
	cl := redistest.Start(t, 3)
	witness := redistest.Start(t, 1).Nodes[0]
	const rounds = 25
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()
	cmds := make([]*exec.Cmd, len(clients))
	outs := make([]*bytes.Buffer, len(clients))
	for i, c := range clients {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+runPattern(test), "-test.count=1", "-test.timeout="+childTimeout.String())
		cmd.Env = append(os.Environ(),
			envChild+"="+strconv.Itoa(i),
			envClient+"="+c.Name,
			envNodes+"="+strings.Join(cl.Addrs(), ","),
			envWitness+"="+witness.Addr(),
			envRounds+"="+strconv.Itoa(rounds),
			envTotal+"="+strconv.Itoa(len(clients)))
		outs[i] = new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatalf("start child %d: %v", i, err)
		}
		cmds[i] = cmd
	}
	failed := false
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			failed = true
			t.Errorf("child %d (%s): %v\n%s", i, clients[i].Name, err, outs[i])
		}
	}
	if failed {
		t.FailNow()
	}
	if n, _ := redis.Int(witness.Do("GET", "overlaps"), nil); n != 0 {
		t.Fatalf("the witness saw %d overlapping holdings", n)
	}
	for i, c := range clients {
		if name, _ := redis.String(witness.Do("GET", "client:"+strconv.Itoa(i)), nil); name != c.Name {
			t.Fatalf("child %d took the lock over %q, want %q", i, name, c.Name)
		}
		if n, _ := redis.Int(witness.Do("GET", "acquired:"+strconv.Itoa(i)), nil); n != rounds {
			t.Fatalf("child %d (%s) held the lock %d times, want %d", i, c.Name, n, rounds)
		}
	}
	if n, _ := redis.Int(witness.Do("GET", "inside"), nil); n != 0 {
		t.Fatalf("the witness counts %d holders inside at the end, want 0", n)
	}
	assertFree(t, cl, processLock)
}

// processChild is one contender of processes, in a child process: it
// takes the lock rounds times over the client the environment names (c,
// or Redigo), after every child is ready.
func processChild(t *testing.T, c Client) {
	id := os.Getenv(envChild)
	switch name := os.Getenv(envClient); name {
	case c.Name:
	case Redigo.Name:
		c = Redigo
	default:
		t.Fatalf("child %s: no client %q here", id, name)
	}
	rounds, err := strconv.Atoi(os.Getenv(envRounds))
	if err != nil {
		t.Fatalf("child %s: rounds: %v", id, err)
	}
	total, err := strconv.Atoi(os.Getenv(envTotal))
	if err != nil {
		t.Fatalf("child %s: total: %v", id, err)
	}
	w, err := redis.Dial("tcp", os.Getenv(envWitness), redis.DialReadTimeout(10*time.Second))
	if err != nil {
		t.Fatalf("child %s: dial the witness: %v", id, err)
	}
	defer w.Close()
	witness := func(cmd string, key string) int {
		t.Helper()
		n, err := redis.Int(w.Do(cmd, key))
		if err != nil {
			t.Fatalf("child %s: %s %s on the witness: %v", id, cmd, key, err)
		}
		return n
	}
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()
	f := c.factory(t, strings.Split(os.Getenv(envNodes), ","),
		redlock.WithTTL(10*time.Second), redlock.WithRetryDelay(5*time.Millisecond), redlock.WithRetryTimes(1<<20))
	l := f.NewLock(processLock, redlock.WithAutoextend(false))
	if _, err := w.Do("SET", "client:"+id, c.Name); err != nil {
		t.Fatalf("child %s: SET on the witness: %v", id, err)
	}
	// Start together, so that the children contend rather than take turns
	// by the accident of their start-up times.
	witness("INCR", "ready")
	for witness("GET", "ready") < total {
		if ctx.Err() != nil {
			t.Fatalf("child %s: the other children did not start: %v", id, ctx.Err())
		}
		time.Sleep(time.Millisecond)
	}
	for range rounds {
		if _, err := l.Acquire(ctx); err != nil {
			t.Fatalf("child %s (%s): Acquire: %v", id, c.Name, err)
		}
		if witness("INCR", "inside") != 1 {
			witness("INCR", "overlaps")
		}
		time.Sleep(time.Millisecond)
		witness("DECR", "inside")
		witness("INCR", "acquired:"+id)
		if err := l.Release(ctx); err != nil {
			t.Fatalf("child %s (%s): Release: %v", id, c.Name, err)
		}
	}
}
