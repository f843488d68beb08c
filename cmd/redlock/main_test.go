package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// binary is the redlock command built once for the tests, which drive it
// as a user would.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "redlock-cli")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "redlock")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command(goTool(), append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building redlock:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// goTool finds the go command that runs the tests: go test puts its own
// GOROOT/bin first on the PATH of the test binary.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

// result is what one run of the binary produced.
type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// cli runs the binary with args and env (added to a clean environment
// without REDLOCK_NODES, REDLOCK_CLUSTER and DBAAS_*), and waits up to a minute.
func cli(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(cleanEnv(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("redlock %s: %v", strings.Join(args, " "), err)
		}
		r.code = ee.ExitCode()
	}
	checkNoCrash(t, r.stderr)
	return r
}

// cleanEnv is the test's environment without node configuration.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, EnvNodes+"=") || strings.HasPrefix(kv, EnvCluster+"=") || strings.HasPrefix(kv, "DBAAS_") || strings.HasPrefix(kv, "NO_COLOR=") || strings.HasPrefix(kv, "GORACE=") {
			continue
		}
		env = append(env, kv)
	}
	// A race-enabled binary sleeps 1 s before a zero exit by default.
	return append(env, "NO_COLOR=1", "GORACE=atexit_sleep_ms=0")
}

// checkNoCrash fails on a Go stack trace or a data race report.
func checkNoCrash(t *testing.T, stderr string) {
	t.Helper()
	for _, bad := range []string{"goroutine ", "panic:", "DATA RACE", ".go:"} {
		if strings.Contains(stderr, bad) {
			t.Fatalf("stderr has %q:\n%s", bad, stderr)
		}
	}
}

// nodesEnv is the REDLOCK_NODES setting for urls.
func nodesEnv(urls []string) []string {
	return []string{EnvNodes + "=" + strings.Join(urls, ",")}
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
