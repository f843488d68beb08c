package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/delayproxy"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// lossNoticeBound is how soon after its keys vanish from a quorum the
// child of a holding command must get SIGTERM. With --ttl 30s the next
// extension is about 22 s away, so a child stopped within this bound was
// stopped by loss detection, not by an extension. It is a bound, not a
// benchmark: the library notices in milliseconds.
const lossNoticeBound = 2 * time.Second

// TestLossStopsChildAtOnce deletes the key of a `redlock run`, a
// `redlock run --permits` and a `redlock elect` on 2 of 3 nodes while the
// child runs under --ttl 30s: the child must get SIGTERM within
// lossNoticeBound of the deletion, and redlock exit 76.
func TestLossStopsChildAtOnce(t *testing.T) {
	c := redistest.Start(t, 3)
	child := `trap 'date +%s%N > "$DIR/term"; exit 0' TERM; echo $$ > "$DIR/pid"; while :; do sleep 0.02; done`
	for _, tc := range []struct {
		name string
		args []string
		key  string
	}{
		{"run", []string{"run", "--ttl", "30s", "loss-run"}, "loss-run"},
		{"run --permits", []string{"run", "--ttl", "30s", "--permits", "1", "loss-sem"}, "loss-sem:permit:0"},
		{"elect", []string{"elect", "--ttl", "30s", "--value", "me", "loss-elect"}, "loss-elect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := append(nodesEnv(c.URLs()), "DIR="+dir)
			args := append(append([]string{}, tc.args...), "--", "sh", "-c", child)
			_, stderr, exited := startRun(t, env, args...)
			waitFor(t, 10*time.Second, "the command to start", func() bool { return fileExists(filepath.Join(dir, "pid")) })
			if n := keyOnNodes(t, c, tc.key); n != 3 {
				t.Fatalf("key %q on %d nodes while the command runs, want 3", tc.key, n)
			}
			deleted := time.Now()
			c.Nodes[0].Do("DEL", tc.key)
			c.Nodes[1].Do("DEL", tc.key)
			if code := waitExit(t, exited, 30*time.Second); code != exitLockLost {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitLockLost, stderr.String())
			}
			data, err := os.ReadFile(filepath.Join(dir, "term"))
			if err != nil {
				t.Fatalf("the command never saw SIGTERM; stderr %q", stderr.String())
			}
			ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
			if err != nil {
				t.Fatalf("term file %q: %v", data, err)
			}
			took := time.Unix(0, ns).Sub(deleted)
			t.Logf("deletion on 2 of 3 nodes to the child's SIGTERM: %v", took.Round(time.Millisecond))
			if took > lossNoticeBound {
				t.Errorf("the child got SIGTERM %v after the deletion, want under %v (loss detection off?)", took, lossNoticeBound)
			}
			if !strings.Contains(stderr.String(), "lost") {
				t.Errorf("stderr %q does not report the loss", stderr.String())
			}
		})
	}
}

// TestRunReleaseReachesSlowNode: with one node behind a 300 ms round trip,
// the release decides at the quorum of the two fast nodes, yet the key
// must be on no node once redlock has exited: no delete of the release
// is left queued when the pipelined factory closes.
func TestRunReleaseReachesSlowNode(t *testing.T) {
	c := redistest.Start(t, 3)
	p, err := delayproxy.Start(c.Nodes[2].Addr(), 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	urls := []string{c.Nodes[0].URL(), c.Nodes[1].URL(), "redis://" + p.Addr()}
	for i := range 3 {
		r := cli(t, nodesEnv(urls), "run", "--ttl", "30s", "slow-release", "--", "true")
		if r.code != 0 {
			t.Fatalf("run %d: exit %d, stderr %q", i, r.code, r.stderr)
		}
		if n := keyOnNodes(t, c, "slow-release"); n != 0 {
			t.Fatalf("run %d: lock key left on %d nodes after redlock exited", i, n)
		}
	}
}

// TestRunWaitReportsHolder: under -v a waiting run, permit or campaign
// says once that it waits (without limit unless --wait says otherwise),
// who holds the lock and for how long, and then that it got it; without
// -v and with stderr not a terminal it says nothing.
func TestRunWaitReportsHolder(t *testing.T) {
	c := redistest.Start(t, 3)
	f := testFactory(t, c, redlock.WithTTL(30*time.Second))
	ctx := t.Context()
	for _, tc := range []struct {
		name    string
		hold    func() (release func(), token string)
		args    []string
		waiting string // what the waiting line starts with
		got     string
	}{
		{"run", func() (func(), string) {
			l := f.NewLock("queue")
			if _, err := l.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			return func() { l.Release(ctx) }, l.Token()
		}, []string{"run", "-v", "queue"}, // --wait defaults to no limit
			`redlock: waiting without limit for lock "queue", held by another client (token %s, `, `redlock: acquired "queue" after `},
		{"permits", func() (func(), string) {
			s := f.NewSemaphore("pool", 1)
			if _, err := s.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			return func() { s.Release(ctx) }, ""
		}, []string{"run", "-v", "--wait", "20s", "--permits", "1", "pool"},
			`redlock: waiting up to 20s for a permit of semaphore "pool": 1 of 1 permits held by other clients, the first frees in `, `redlock: acquired "pool" after `},
		{"elect", func() (func(), string) {
			el := f.NewElection("chief")
			if err := el.Campaign(ctx, "host-a"); err != nil {
				t.Fatal(err)
			}
			return func() { el.Resign(ctx) }, ""
		}, []string{"elect", "-v", "--value", "host-b", "chief"},
			`redlock: waiting without limit to lead "chief": the leader is "host-a" (`, `redlock: leading "chief" as "host-b" after `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release, token := tc.hold()
			_, stderr, exited := startRun(t, nodesEnv(c.URLs()), append(tc.args, "--", "true")...)
			waitFor(t, 10*time.Second, "the waiting line", func() bool { return strings.Contains(stderr.String(), "waiting") })
			release()
			if code := waitExit(t, exited, 20*time.Second); code != 0 {
				t.Fatalf("exit %d; stderr %q", code, stderr.String())
			}
			out := stderr.String()
			want := tc.waiting
			if token != "" {
				want = fmt.Sprintf(want, shortToken(token))
			}
			if strings.Count(out, "waiting") != 1 || !strings.Contains(out, want) {
				t.Errorf("stderr %q, want one line starting %q", out, want)
			}
			if !strings.Contains(out, tc.got) {
				t.Errorf("stderr %q, want a line starting %q", out, tc.got)
			}
		})
	}
	t.Run("quiet without -v", func(t *testing.T) {
		l := f.NewLock("quiet")
		if _, err := l.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		go func() { time.Sleep(500 * time.Millisecond); l.Release(ctx) }()
		if r := cli(t, nodesEnv(c.URLs()), "run", "--wait", "20s", "quiet", "--", "true"); r.code != 0 || r.stderr != "" {
			t.Errorf("exit %d, stderr %q; want 0 and nothing (stderr is not a terminal)", r.code, r.stderr)
		}
	})
}
