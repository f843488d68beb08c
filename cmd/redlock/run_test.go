package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// holdLock acquires name on the cluster from the test, as another client,
// and releases it at cleanup.
func holdLock(t *testing.T, c *redistest.Cluster, name string) *redlock.Lock {
	t.Helper()
	pools := make([]redlock.Pool, 0, len(c.Nodes))
	for _, p := range c.Pools() {
		pools = append(pools, p)
	}
	f, err := redlock.NewFactory(pools, redlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	l := f.NewLock(name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	return l
}

// keyOnNodes counts the nodes that have the key name.
func keyOnNodes(t *testing.T, c *redistest.Cluster, name string) int {
	t.Helper()
	n := 0
	for _, nd := range c.Nodes {
		if nd.Running() {
			if v, _ := redis.Int(nd.Do("EXISTS", name), nil); v == 1 {
				n++
			}
		}
	}
	return n
}

// TestRunNeverOverlaps starts several `redlock run` processes on one name
// at once. Each child appends its start and end to a log and does a
// read-sleep-write increment of a counter file: with the lock, the log
// alternates start/end of one child at a time, the recorded intervals never
// overlap and no increment is lost.
func TestRunNeverOverlaps(t *testing.T) {
	c := redistest.Start(t, 3)
	dir := t.TempDir()
	logf, counter := filepath.Join(dir, "log"), filepath.Join(dir, "counter")
	if err := os.WriteFile(counter, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `echo "S $ID $(date +%s%N)" >> "$LOG"
c=$(cat "$COUNTER"); sleep 0.15; echo $((c+1)) > "$COUNTER"
echo "E $ID $(date +%s%N)" >> "$LOG"`
	const procs = 5
	var wg sync.WaitGroup
	results := make([]result, procs)
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := append(nodesEnv(c.URLs()), "ID="+strconv.Itoa(i), "LOG="+logf, "COUNTER="+counter)
			results[i] = cli(t, env, "run", "--wait", "30s", "--ttl", "5s", "shared", "--", "sh", "-c", script)
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
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2*procs {
		t.Fatalf("log has %d lines, want %d:\n%s", len(lines), 2*procs, data)
	}
	type interval struct {
		id         string
		start, end int64
	}
	var ivs []interval
	for i := 0; i < len(lines); i += 2 {
		s, e := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(s) != 3 || len(e) != 3 || s[0] != "S" || e[0] != "E" || s[1] != e[1] {
			t.Fatalf("children interleaved at lines %d-%d:\n%s", i+1, i+2, data)
		}
		start, _ := strconv.ParseInt(s[2], 10, 64)
		end, _ := strconv.ParseInt(e[2], 10, 64)
		ivs = append(ivs, interval{s[1], start, end})
	}
	sort.Slice(ivs, func(a, b int) bool { return ivs[a].start < ivs[b].start })
	for i := 1; i < len(ivs); i++ {
		if ivs[i].start < ivs[i-1].end {
			t.Errorf("child %s started %dns before child %s ended", ivs[i].id, ivs[i-1].end-ivs[i].start, ivs[i-1].id)
		}
	}
	got, _ := os.ReadFile(counter)
	if strings.TrimSpace(string(got)) != strconv.Itoa(procs) {
		t.Errorf("counter = %s, want %d: increments were lost", strings.TrimSpace(string(got)), procs)
	}
	if n := keyOnNodes(t, c, "shared"); n != 0 {
		t.Errorf("lock key left on %d nodes after every run exited", n)
	}
}

// TestRunExitCodes checks that the command's exit code, or 128+n for a
// signal, is passed through and the lock is released either way.
func TestRunExitCodes(t *testing.T) {
	c := redistest.Start(t, 3)
	env := nodesEnv(c.URLs())
	for _, tc := range []struct {
		script string
		code   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"exit 42", 42},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM)},
		{`test "$REDLOCK_NAME" = codes && test -n "$REDLOCK_TOKEN"`, 0},
		{"echo out; echo err >&2; exit 1", 1},
	} {
		r := cli(t, env, "run", "codes", "--", "sh", "-c", tc.script)
		if r.code != tc.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", tc.script, r.code, tc.code, r.stderr)
		}
		if n := keyOnNodes(t, c, "codes"); n != 0 {
			t.Errorf("%q: lock key left on %d nodes", tc.script, n)
		}
		if strings.HasPrefix(tc.script, "echo out") && (r.stdout != "out\n" || r.stderr != "err\n") {
			t.Errorf("stdio not passed through: stdout %q, stderr %q", r.stdout, r.stderr)
		}
	}
	// stdin passes through too.
	cmd := exec.Command(binary, "run", "codes", "--", "tr", "a-z", "A-Z")
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdin = strings.NewReader("hello\n")
	out, err := cmd.Output()
	if err != nil || string(out) != "HELLO\n" {
		t.Errorf("stdin pass-through: %q, %v", out, err)
	}
	// 127 and 126 for a command that is missing or cannot be executed.
	if r := cli(t, env, "run", "codes", "--", "/nonexistent/cmd"); r.code != exitNotFound {
		t.Errorf("missing command: exit %d, want %d", r.code, exitNotFound)
	}
	if r := cli(t, env, "run", "codes", "--", t.TempDir()); r.code != exitCannotExec {
		t.Errorf("directory as command: exit %d, want %d", r.code, exitCannotExec)
	}
	if n := keyOnNodes(t, c, "codes"); n != 0 {
		t.Errorf("lock key left on %d nodes after a failed start", n)
	}
}

// TestRunNotAcquired checks exit 75 with a one-line message when another
// client holds the lock, with --no-wait and with a short --wait, and that
// the command never runs.
func TestRunNotAcquired(t *testing.T) {
	c := redistest.Start(t, 3)
	holdLock(t, c, "busy")
	marker := filepath.Join(t.TempDir(), "ran")
	for _, args := range [][]string{
		{"run", "--no-wait", "busy", "--", "touch", marker},
		{"run", "--wait", "300ms", "busy", "--", "touch", marker},
	} {
		r := cli(t, nodesEnv(c.URLs()), args...)
		if r.code != exitNotAcquired {
			t.Errorf("%v: exit %d, want %d", args, r.code, exitNotAcquired)
		}
		if !strings.Contains(r.stderr, `lock "busy" not acquired`) || !strings.Contains(r.stderr, "held by another client") ||
			strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: stderr %q, want one line saying another client holds the lock", args, r.stderr)
		}
		if fileExists(marker) {
			t.Fatalf("%v: the command ran without the lock", args)
		}
	}
}

// TestRunNotAcquiredNodeDown checks the message when no client holds the
// lock but a quorum could not be had: another client's key on one node,
// one node down. It says once that the lock was not acquired, names the
// failed node, and repeats neither "not acquired" nor the context's
// deadline.
func TestRunNotAcquiredNodeDown(t *testing.T) {
	c := redistest.Start(t, 3)
	c.Nodes[0].Do("SET", "split", "another-client", "PX", 30000)
	c.Nodes[2].Kill()
	for _, args := range [][]string{
		{"run", "--no-wait", "split", "--", "true"},
		{"run", "--wait", "300ms", "split", "--", "true"},
	} {
		r := cli(t, nodesEnv(c.URLs()), args...)
		if r.code != exitNotAcquired {
			t.Errorf("%v: exit %d, want %d; stderr %q", args, r.code, exitNotAcquired, r.stderr)
		}
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		last := lines[len(lines)-1]
		wantNode := fmt.Sprintf("node 2 (%s): ", c.Nodes[2].Addr())
		if !strings.HasPrefix(last, `redlock: lock "split" not acquired `) || !strings.Contains(last, wantNode) ||
			strings.Count(last, "not acquired") != 1 || strings.Contains(last, "deadline") {
			t.Errorf("%v: last line %q, want one short sentence naming %q", args, last, wantNode)
		}
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "redlock: warning: going on without node "+c.Nodes[2].Addr()) {
			t.Errorf("%v: stderr %q, want a warning about node 2 and the error", args, r.stderr)
		}
	}
}

// startRun starts `redlock run` in the background and returns the process
// and its stderr.
func startRun(t *testing.T, env []string, args ...string) (*exec.Cmd, *syncBuffer, chan int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(cleanEnv(), env...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	// A command that outlives redlock, as one that ignores SIGTERM does
	// when a failed test kills redlock, keeps stderr open: Wait gives up on
	// it this long after redlock exits, instead of hanging the cleanup.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan int, 1)
	go func() {
		_ = cmd.Wait()
		exited <- cmd.ProcessState.ExitCode()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	return cmd, stderr, exited
}

// waitExit waits for the exit code of a startRun process.
func waitExit(t *testing.T, exited chan int, d time.Duration) int {
	t.Helper()
	select {
	case code := <-exited:
		exited <- code // for the cleanup
		return code
	case <-time.After(d):
		t.Fatalf("redlock did not exit within %v", d)
		return 0
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// processAlive reports whether pid exists (and is not a zombie).
func processAlive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	fields := strings.Fields(string(data))
	return len(fields) > 2 && fields[2] != "Z"
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("pid file %s: %q", path, data)
	}
	return pid
}

// TestRunLockLost deletes the lock's key on every node while the command
// runs: redlock must notice (by loss detection, or at its next extension),
// stop the command's whole process group (SIGTERM, then SIGKILL for a
// command that ignores it), and exit 76. The command writes its pid to a
// temporary file and renames it, so that the test, which waits for the
// file, never reads it half written.
func TestRunLockLost(t *testing.T) {
	c := redistest.Start(t, 3)
	for _, tc := range []struct {
		name, script string
		termSeen     bool
	}{
		{"exits on SIGTERM", `trap 'echo TERM >> "$DIR/log"; exit 0' TERM; sleep 60 & echo $! > "$DIR/grandchild"; echo $$ > "$DIR/pid.tmp"; mv "$DIR/pid.tmp" "$DIR/pid"; while :; do sleep 0.05; done`, true},
		{"ignores SIGTERM", `trap '' TERM; sleep 60 & echo $! > "$DIR/grandchild"; echo $$ > "$DIR/pid.tmp"; mv "$DIR/pid.tmp" "$DIR/pid"; while :; do sleep 0.05; done`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			name := "lost-" + strings.ReplaceAll(tc.name, " ", "-")
			env := append(nodesEnv(c.URLs()), "DIR="+dir)
			_, stderr, exited := startRun(t, env, "run", "--ttl", "1s", "--kill-grace", "500ms", name, "--", "sh", "-c", tc.script)
			waitFor(t, 10*time.Second, "the command to start", func() bool { return fileExists(filepath.Join(dir, "pid")) })
			pid, grandchild := readPid(t, filepath.Join(dir, "pid")), readPid(t, filepath.Join(dir, "grandchild"))
			t.Cleanup(func() {
				if t.Failed() { // redlock may not have stopped the group: it runs in its own (Setpgid)
					_ = syscall.Kill(-pid, syscall.SIGKILL)
				}
			})
			for _, nd := range c.Nodes {
				nd.Do("DEL", name)
			}
			if code := waitExit(t, exited, 10*time.Second); code != exitLockLost {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitLockLost, stderr.String())
			}
			if !strings.Contains(stderr.String(), `lock "`+name+`" lost`) {
				t.Errorf("stderr %q does not report the loss", stderr.String())
			}
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			if got := strings.Contains(string(log), "TERM"); got != tc.termSeen {
				t.Errorf("command saw SIGTERM: %v, want %v", got, tc.termSeen)
			}
			waitFor(t, 5*time.Second, "the command and its children to be gone", func() bool {
				return !processAlive(pid) && !processAlive(grandchild)
			})
		})
	}
}

// TestRunForwardsSignals sends SIGINT and SIGTERM to redlock while the
// command runs: the command gets the signal, its exit code comes back, and
// the lock is released.
func TestRunForwardsSignals(t *testing.T) {
	c := redistest.Start(t, 3)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			script := `trap 'echo INT >> "$DIR/log"; exit 5' INT; trap 'echo TERM >> "$DIR/log"; exit 6' TERM; touch "$DIR/ready"; while :; do sleep 0.05; done`
			cmd, stderr, exited := startRun(t, append(nodesEnv(c.URLs()), "DIR="+dir), "run", "sig", "--", "sh", "-c", script)
			waitFor(t, 10*time.Second, "the command to start", func() bool { return fileExists(filepath.Join(dir, "ready")) })
			if n := keyOnNodes(t, c, "sig"); n < 2 {
				t.Fatalf("lock key on %d nodes while the command runs, want a quorum", n)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			want, line := 5, "INT"
			if sig == syscall.SIGTERM {
				want, line = 6, "TERM"
			}
			if code := waitExit(t, exited, 10*time.Second); code != want {
				t.Fatalf("exit %d, want the command's %d; stderr %q", code, want, stderr.String())
			}
			if log, _ := os.ReadFile(filepath.Join(dir, "log")); strings.TrimSpace(string(log)) != line {
				t.Errorf("command log %q, want %q", log, line)
			}
			if n := keyOnNodes(t, c, "sig"); n != 0 {
				t.Errorf("lock key left on %d nodes", n)
			}
		})
	}
	t.Run("while waiting", func(t *testing.T) {
		holdLock(t, c, "sig-wait")
		marker := filepath.Join(t.TempDir(), "ran")
		cmd, stderr, exited := startRun(t, nodesEnv(c.URLs()), "run", "-v", "--wait", "forever", "sig-wait", "--", "touch", marker)
		time.Sleep(300 * time.Millisecond) // let it start waiting
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, exited, 10*time.Second); code != 128+int(syscall.SIGTERM) {
			t.Fatalf("exit %d, want %d; stderr %q", code, 128+int(syscall.SIGTERM), stderr.String())
		}
		if fileExists(marker) {
			t.Error("the command ran")
		}
	})
}

// TestStatusJSON checks the JSON of status for a held lock, with a node
// down, and for a free lock, and the human table.
func TestStatusJSON(t *testing.T) {
	c := redistest.Start(t, 3)
	env := nodesEnv(c.URLs())
	status := func(code int) statusJSON {
		t.Helper()
		r := cli(t, env, "status", "--json", "st")
		if r.code != code || r.stderr != "" {
			t.Fatalf("status: exit %d, stderr %q; want exit %d and nothing on stderr", r.code, r.stderr, code)
		}
		var st statusJSON
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatalf("status --json: %v\n%s", err, r.stdout)
		}
		return st
	}
	if st := status(exitNotHeld); st.Held || st.Holder != "" || len(st.Nodes) != 3 || st.Quorum != 2 || st.Answered != 3 {
		t.Errorf("free lock: %+v", st)
	}
	if human := cli(t, env, "status", "st"); human.code != exitNotHeld || !strings.Contains(human.stdout, "FREE") || human.stderr != "" {
		t.Errorf("human status of a free lock: exit %d, want %d\n%s%s", human.code, exitNotHeld, human.stdout, human.stderr)
	}
	l := holdLock(t, c, "st")
	st := status(exitOK)
	if !st.Held || st.Holder != l.Token() || st.HolderTTLMs <= 0 || st.HolderTTLMs > 30000 {
		t.Errorf("held lock: %+v, want holder %s", st, l.Token())
	}
	for i, n := range st.Nodes {
		if !n.HasKey || !n.Holder || n.Token != l.Token() || n.TTLMs <= 0 || n.Error != "" || n.Addr != c.Nodes[i].Addr() {
			t.Errorf("node %d: %+v", i, n)
		}
	}
	human := cli(t, env, "status", "st")
	if human.code != 0 || !strings.Contains(human.stdout, "HELD") || !strings.Contains(human.stdout, shortToken(l.Token())) {
		t.Errorf("human status: exit %d\n%s", human.code, human.stdout)
	}
	c.Nodes[2].Kill()
	st = status(exitOK)
	if !st.Held || st.Answered != 2 || st.Nodes[2].Error == "" || st.Nodes[2].HasKey {
		t.Errorf("held lock with node 2 down: %+v", st)
	}
	c.Nodes[1].Kill()
	r := cli(t, env, "status", "--json", "st")
	if r.code != exitUnavailable || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("status with 1 of 3 nodes: exit %d, stderr %q; want %d and one line", r.code, r.stderr, exitUnavailable)
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Answered != 1 {
		t.Errorf("status --json with 1 of 3 nodes: %v, %+v", err, st)
	}
	if human := cli(t, env, "status", "st"); human.code != exitUnavailable || !strings.Contains(human.stdout, "UNKNOWN") {
		t.Errorf("human status with 1 of 3 nodes: exit %d, want %d and UNKNOWN\n%s", human.code, exitUnavailable, human.stdout)
	}
}

// TestRunFencingExportsAGrowingToken: successive `redlock run --fencing`
// children see ever larger REDLOCK_FENCE values, `redlock status` shows
// the last one on a quorum of nodes, and without --fencing there is none.
func TestRunFencingExportsAGrowingToken(t *testing.T) {
	c := redistest.Start(t, 3)
	env := nodesEnv(c.URLs())
	var last int64
	for i := range 3 {
		r := cli(t, env, "run", "--fencing", "fenced-job", "--", "sh", "-c", `echo "$REDLOCK_FENCE"`)
		fence, err := strconv.ParseInt(strings.TrimSpace(r.stdout), 10, 64)
		if r.code != 0 || err != nil || fence <= last {
			t.Fatalf("child %d: exit %d, REDLOCK_FENCE %q (after %d), stderr %q", i, r.code, r.stdout, last, r.stderr)
		}
		last = fence
	}
	r := cli(t, env, "status", "--json", "fenced-job")
	var st statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	committed := 0
	for _, n := range st.Nodes {
		if n.Fence == last {
			committed++
		}
	}
	if committed < st.Quorum {
		t.Fatalf("status shows fence %d on %d nodes, want a quorum: %+v", last, committed, st.Nodes)
	}
	if r := cli(t, env, "status", "fenced-job"); !strings.Contains(r.stdout, "FENCE") || !strings.Contains(r.stdout, strconv.FormatInt(last, 10)) {
		t.Fatalf("status table lacks the fence %d:\n%s", last, r.stdout)
	}
	if r := cli(t, env, "run", "plain-job", "--", "sh", "-c", `test -z "$REDLOCK_FENCE"`); r.code != 0 {
		t.Fatalf("REDLOCK_FENCE set without --fencing (exit %d)", r.code)
	}
}
