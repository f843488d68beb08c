package main

import (
	"bufio"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

var verifiedLine = regexp.MustCompile(`^  ✓ no overlaps, counter = (\d+)$`)

// checkDemo checks that the demo succeeded and ended with its verified line.
func checkDemo(t *testing.T, r result) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("demo: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	m := verifiedLine.FindStringSubmatch(lines[len(lines)-1])
	if m == nil {
		t.Fatalf("demo does not end with its verified line:\n%s", r.stdout)
	}
	if n, _ := strconv.Atoi(m[1]); n < 10 {
		t.Errorf("counter = %d: the workers hardly took turns", n)
	}
	for _, want := range []string{"↻ extended", "✗ node 2", "never lost", "(node 2 down: 2 of 3 is a quorum)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "\x1b[") {
		t.Error("colour codes written to a pipe")
	}
	// The demo's own deadline (14 s) makes it fail when it runs long.
	t.Logf("demo took %v", r.elapsed)
}

// TestDemoEmbedded runs the newcomer's demo with nothing configured.
func TestDemoEmbedded(t *testing.T) {
	r := cli(t, nil, "demo")
	checkDemo(t, r)
	if !strings.Contains(r.stdout, "embedded") || !strings.Contains(r.stdout, "killed") {
		t.Errorf("demo on embedded nodes should say so and kill one:\n%s", r.stdout)
	}
}

// TestDemoConfiguredNodes runs the demo on real redis-server nodes, where
// it cuts a node off instead of killing it, and leaves no key behind.
func TestDemoConfiguredNodes(t *testing.T) {
	c := redistest.Start(t, 3)
	r := cli(t, nodesEnv(c.URLs()), "demo", "--workers", "3")
	checkDemo(t, r)
	if !strings.Contains(r.stdout, "cut off") {
		t.Errorf("demo on configured nodes should cut a node off:\n%s", r.stdout)
	}
	for _, nd := range c.Nodes {
		if keys, _ := nd.Do("KEYS", "redlock-demo:*").([]any); len(keys) != 0 {
			t.Errorf("node %s keeps demo keys %v", nd.Addr(), keys)
		}
	}
}

// devNodes is a `redlock dev` running in the background.
type devNodes struct {
	env    []string // the REDLOCK_NODES=... line it printed
	cmd    *exec.Cmd
	exited chan error
	stderr *syncBuffer
}

// startDev starts `redlock dev` with 3 nodes on free ports and waits for
// its REDLOCK_NODES line. It is killed at cleanup if still running.
func startDev(t *testing.T) *devNodes {
	t.Helper()
	cmd := exec.Command(binary, "dev", "--port", "0", "--nodes", "3")
	cmd.Env = cleanEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &devNodes{cmd: cmd, exited: make(chan error, 1), stderr: &syncBuffer{}}
	cmd.Stderr = d.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(stdout)
	first := make(chan string, 1)
	go func() {
		line, _ := lines.ReadString('\n')
		first <- line
		_, _ = io.Copy(io.Discard, lines)
		d.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.Process.Kill() == nil {
			<-d.exited
		}
	})
	line := strings.TrimSpace(<-first)
	if !strings.HasPrefix(line, EnvNodes+"=redis://127.0.0.1:") || strings.Count(line, ",") != 2 {
		t.Fatalf("dev printed %q, want the REDLOCK_NODES line of 3 nodes (stderr %q)", line, d.stderr.String())
	}
	d.env = []string{line}
	return d
}

// TestDev starts embedded nodes with `redlock dev`, uses the printed
// REDLOCK_NODES line with run and status, and stops it with SIGINT: it
// must exit at once (there is nothing to flush).
func TestDev(t *testing.T) {
	d := startDev(t)
	if r := cli(t, d.env, "run", "hello", "--", "sh", "-c", "exit 4"); r.code != 4 {
		t.Errorf("run on dev nodes: exit %d, stderr %q", r.code, r.stderr)
	}
	l := startHolder(t, d.env, "dev-held")
	if r := cli(t, d.env, "status", "dev-held"); r.code != 0 || !strings.Contains(r.stdout, "HELD") {
		t.Errorf("status on dev nodes: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	l()
	start := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.exited:
		if err != nil {
			t.Errorf("dev after SIGINT: %v, stderr %q", err, d.stderr.String())
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("dev took %v to exit after SIGINT, want under 1s", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("dev did not stop on SIGINT")
	}
}

// startHolder holds name with a `redlock run` in the background until the
// returned function is called.
func startHolder(t *testing.T, env []string, name string) (stop func()) {
	t.Helper()
	dir := t.TempDir()
	cmd, _, exited := startRun(t, append(env, "DIR="+dir), "run", name, "--", "sh", "-c", `touch "$DIR/ready"; sleep 30`)
	waitFor(t, 10*time.Second, "the holder to start", func() bool { return fileExists(dir + "/ready") })
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		waitExit(t, exited, 10*time.Second)
	}
}
