//go:build linux

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// TestRunGuardianStopsCommandWhenRedlockDies kills redlock with SIGKILL
// while its command runs: the command ignores SIGTERM (the parent-death
// signal) and has a child of its own, and would run on unprotected once
// the lock ran out. The guardian must stop the whole group, SIGKILL after
// --kill-grace, say why on stderr, and exit.
func TestRunGuardianStopsCommandWhenRedlockDies(t *testing.T) {
	c := redistest.Start(t, 3)
	dir := t.TempDir()
	const name = "guarded"
	script := `trap '' TERM; sleep 60 & echo $! > "$DIR/grandchild"; echo $$ > "$DIR/pid.tmp"; mv "$DIR/pid.tmp" "$DIR/pid"; while :; do sleep 0.05; done`
	cmd, stderr, exited := startRun(t, append(nodesEnv(c.URLs()), "DIR="+dir), "run", "--ttl", "2s", "--kill-grace", "500ms", name, "--", "sh", "-c", script)
	waitFor(t, 10*time.Second, "the command to start", func() bool { return fileExists(filepath.Join(dir, "pid")) })
	pid, grandchild := readPid(t, filepath.Join(dir, "pid")), readPid(t, filepath.Join(dir, "grandchild"))
	t.Cleanup(func() {
		if t.Failed() {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	})
	if g := guardiansOf(name); len(g) != 1 {
		t.Fatalf("%d guardians of %q while the command runs, want 1", len(g), name)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitExit(t, exited, 15*time.Second) // once the guardian and the command let go of stderr
	waitFor(t, 5*time.Second, "the command and its child to be gone", func() bool {
		return !processAlive(pid) && !processAlive(grandchild)
	})
	if !strings.Contains(stderr.String(), `redlock died while the command held lock "`+name+`"`) {
		t.Errorf("stderr %q does not say why the command was stopped", stderr.String())
	}
	waitFor(t, 5*time.Second, "the guardian to exit", func() bool { return len(guardiansOf(name)) == 0 })
}

// TestRunGuardianStandsDown checks that a run that ends normally, or whose
// command cannot start, leaves no guardian behind (redlock waits for it)
// and that the guardian says nothing then.
func TestRunGuardianStandsDown(t *testing.T) {
	c := redistest.Start(t, 3)
	for _, tc := range []struct {
		name string
		argv []string
		code int
	}{
		{"guard-exits", []string{"sh", "-c", "exit 3"}, 3},
		{"guard-not-found", []string{"/nonexistent/redlock-test-command"}, exitNotFound},
	} {
		r := cli(t, nodesEnv(c.URLs()), append([]string{"run", tc.name, "--"}, tc.argv...)...)
		if r.code != tc.code {
			t.Fatalf("%s: exit %d, want %d; stderr %q", tc.name, r.code, tc.code, r.stderr)
		}
		if strings.Contains(r.stderr, "guardian") {
			t.Errorf("%s: stderr %q: the guardian spoke on a normal end", tc.name, r.stderr)
		}
		if g := guardiansOf(tc.name); len(g) != 0 {
			t.Errorf("%s: guardian processes %v left after redlock exited", tc.name, g)
		}
	}
}

// guardiansOf lists the live guardian processes of lock name.
func guardiansOf(name string) []int {
	want := []byte(guardianArg + "\x00" + name + "\x00")
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, want) && processAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
