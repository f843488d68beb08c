package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// scrape returns the body of /metrics at addr, or "" while nothing answers.
func scrape(addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestRunMetrics checks that run --metrics-addr serves the lock's metrics
// while the command runs, and stops serving when it ends.
func TestRunMetrics(t *testing.T) {
	c := redistest.Start(t, 3)
	addr := freeAddr(t)
	stop := filepath.Join(t.TempDir(), "stop")
	_, stderr, exited := startRun(t, nodesEnv(c.URLs()), "run", "--metrics-addr", addr, "metered", "--",
		"sh", "-c", "while [ ! -f "+stop+" ]; do sleep 0.05; done")
	want := []string{
		`redlock_acquire_duration_seconds_count{redlock_lock="metered",redlock_outcome="acquired"} 1`,
		`redlock_held{redlock_lock="metered"} 1`,
	}
	var body string
	waitFor(t, 10*time.Second, "the lock's metrics", func() bool {
		body = scrape(addr)
		for _, w := range want {
			if !strings.Contains(body, w) {
				return false
			}
		}
		return true
	})
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, exited, 10*time.Second); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if body := scrape(addr); body != "" {
		t.Fatal("/metrics still served after run exited")
	}
}

// TestMetricsAddrBusy checks that an address in use is a usage error.
func TestMetricsAddrBusy(t *testing.T) {
	c := redistest.Start(t, 3)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, args := range [][]string{
		{"run", "--metrics-addr", ln.Addr().String(), "busy", "--", "true"},
		{"demo", "--metrics-addr", ln.Addr().String()},
	} {
		r := cli(t, nodesEnv(c.URLs()), args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--metrics-addr "+ln.Addr().String()) {
			t.Errorf("%s with a busy address: exit %d, stderr %q; want %d naming the flag", args[0], r.code, r.stderr, exitUsage)
		}
	}
}
