package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// TestCluster runs status, doctor and run on the masters of a real Redis
// Cluster of 3 masters, given by one seed (--cluster or REDLOCK_CLUSTER):
// each node is a master, keeps the lock's key under its own hash tag
// ("{n}NAME") in a slot that master owns, and the output says so.
func TestCluster(t *testing.T) {
	rc := redistest.StartRedisCluster(t, 3, 0)
	seeds := rc.Seeds()
	seed := "--cluster=" + seeds[1] // any member will do, bare host:port
	const name = "cl-lock"

	// A lock held by another client over the same cluster.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	nodes, err := redlock.ClusterNodes(ctx, seeds[:1])
	if err != nil {
		t.Fatal(err)
	}
	f, err := redlock.NewFactoryFromNodes(nodes, redlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(); nodes[0].(interface{ Close() error }).Close() })

	t.Run("status free", func(t *testing.T) {
		r := cli(t, nil, "status", seed, name)
		if r.code != exitNotHeld || !strings.Contains(r.stdout, "FREE") || r.stderr != "" {
			t.Fatalf("status of a free lock: exit %d, want %d\n%s%s", r.code, exitNotHeld, r.stdout, r.stderr)
		}
	})

	l := f.NewLock(name)
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}

	t.Run("status", func(t *testing.T) {
		j := cli(t, nil, "status", "--json", seed, name)
		if j.code != exitOK || j.stderr != "" {
			t.Fatalf("status --json of a held lock: exit %d, stderr %q\n%s", j.code, j.stderr, j.stdout)
		}
		var st statusJSON
		if err := json.Unmarshal([]byte(j.stdout), &st); err != nil {
			t.Fatalf("status --json: %v\n%s", err, j.stdout)
		}
		if !st.Held || st.Holder != l.Token() || st.Quorum != 2 || st.Answered != 3 || len(st.Nodes) != 3 {
			t.Fatalf("held lock: %+v, want held by %s on 3 of 3 masters", st, l.Token())
		}
		var addrs []string
		for _, n := range st.Nodes {
			if n.Slot == nil {
				t.Fatalf("node %d has no slot: %+v", n.Node, n)
			}
			checkClusterKey(t, n.Addr, n.Key, *n.Slot, name)
			if !n.Holder || n.Token != l.Token() {
				t.Errorf("node %d: %+v, want the holder's token", n.Node, n)
			}
			// The key under the tag holds the token, on that master.
			if v, err := redis.String(redisDo(t, n.Addr, "GET", n.Key)); err != nil || v != l.Token() {
				t.Errorf("GET %s on %s: %q, %v; want the token", n.Key, n.Addr, v, err)
			}
			addrs = append(addrs, n.Addr)
		}
		checkMasters(t, addrs, seeds)

		r := cli(t, nil, "status", seed, name)
		if r.code != exitOK || r.stderr != "" {
			t.Fatalf("status of a held lock: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		t.Logf("redlock status %s %s:\n%s", seed, name, r.stdout)
		lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
		if len(lines) != 5 || !strings.Contains(lines[0], "HELD") || strings.Join(strings.Fields(lines[1]), " ") != "NODE MASTER SLOT KEY NAME KEY TOKEN TTL FENCE" {
			t.Fatalf("status table:\n%s", r.stdout)
		}
		for i, n := range st.Nodes {
			f := strings.Fields(lines[2+i])
			want := []string{fmt.Sprint(i), n.Addr, fmt.Sprint(*n.Slot), n.Key, "holder", shortToken(l.Token())}
			if len(f) != 8 || !slices.Equal(f[:6], want) {
				t.Errorf("status row %d: %q, want it to start with %q", i, lines[2+i], want)
			}
		}
	})

	t.Run("doctor", func(t *testing.T) {
		r := cli(t, nil, "doctor", seed)
		t.Logf("redlock doctor %s:\n%s%s", seed, r.stdout, r.stderr)
		if r.code != exitOK || r.stderr != "" {
			t.Fatalf("doctor on a durable cluster: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
		if len(lines) != 4 || strings.Join(strings.Fields(lines[0]), " ") != "NODE MASTER KEY TAG SLOT VERDICT WHY" {
			t.Fatalf("doctor table:\n%s", r.stdout)
		}
		j := cli(t, nil, "doctor", "--json", seed)
		var report []doctorJSON
		if err := json.Unmarshal([]byte(j.stdout), &report); err != nil || j.code != exitOK {
			t.Fatalf("doctor --json: exit %d, %v\n%s", j.code, err, j.stdout)
		}
		if len(report) != 3 {
			t.Fatalf("doctor --json: %d nodes, want 3: %+v", len(report), report)
		}
		var addrs []string
		for i, n := range report {
			if n.Slot == nil || !n.Fit {
				t.Fatalf("node %d: %+v, want a fit master with a slot", i, n)
			}
			checkClusterKey(t, n.Addr, n.KeyTag+name, *n.Slot, name)
			want := []string{fmt.Sprint(i), n.Addr, n.KeyTag, fmt.Sprint(*n.Slot), "ok", "votes:"}
			if f := strings.Fields(lines[1+i]); len(f) < 6 || !slices.Equal(f[:6], want) {
				t.Errorf("doctor row %d: %q, want it to start with %q", i, lines[1+i], want)
			}
			addrs = append(addrs, n.Addr)
		}
		checkMasters(t, addrs, seeds)
	})

	t.Run("run", func(t *testing.T) {
		// run on the cluster of REDLOCK_CLUSTER takes the lock "job" and
		// runs its child, which sees that holding with status on the
		// same variable (exit 0: held; 3, passed through: free).
		_, stderr, exited := startRun(t, []string{EnvCluster + "=" + strings.Join(seeds, ",")},
			"run", "-v", "--ttl", "10s", "job", "--", binary, "status", "job")
		if code := waitExit(t, exited, 30*time.Second); code != exitOK {
			t.Fatalf("run --cluster with status in the child: exit %d, want 0 (held)\n%s", code, stderr.String())
		}
		if !strings.Contains(stderr.String(), `acquired "job"`) {
			t.Errorf("run -v stderr: %q", stderr.String())
		}
		if r := cli(t, nil, "status", seed, "job"); r.code != exitNotHeld {
			t.Errorf("status after run: exit %d, want %d (released)\n%s%s", r.code, exitNotHeld, r.stdout, r.stderr)
		}
	})

	t.Run("errors", func(t *testing.T) {
		standalone := redistest.Start(t, 1)
		two := redistest.StartRedisCluster(t, 2, 0)
		for _, tc := range []struct {
			name string
			env  []string
			args []string
			code int
			want []string
		}{
			{"--nodes and --cluster", nil, []string{"status", seed, "--nodes", "redis://a:1,redis://b:2,redis://c:3", name},
				exitUsage, []string{"--nodes and --cluster cannot be used together"}},
			{"--nodes and --cluster for run", nil, []string{"run", seed, "--nodes", "redis://a:1,redis://b:2,redis://c:3", name, "--", "true"},
				exitUsage, []string{"--nodes and --cluster cannot be used together"}},
			{"both variables", []string{EnvNodes + "=a:1,b:2,c:3", EnvCluster + "=" + seeds[0]}, []string{"doctor"},
				exitUsage, []string{"both REDLOCK_NODES and REDLOCK_CLUSTER are set"}},
			{"standalone seed", nil, []string{"status", "--cluster", standalone.URLs()[0], name},
				exitUsage, []string{"--cluster: " + standalone.Nodes[0].Addr() + " is a standalone Redis server", "--nodes"}},
			{"standalone seed for doctor", []string{EnvCluster + "=" + standalone.Nodes[0].Addr()}, []string{"doctor"},
				exitUsage, []string{"REDLOCK_CLUSTER: " + standalone.Nodes[0].Addr() + " is a standalone Redis server"}},
			{"unreachable seed", nil, []string{"doctor", "--cluster", "127.0.0.1:1"},
				exitUnavailable, []string{"--cluster: reading the cluster's slot map", "127.0.0.1:1"}},
			{"bad seed URL", nil, []string{"status", "--cluster", "http://a:1", name}, exitUsage, []string{"redlock: --cluster: ", `node URL "http://a:1": scheme must be redis or rediss`}},
			{"two masters", nil, []string{"doctor", "--cluster", two.Seeds()[0]},
				exitUsage, []string{"--cluster: the Redis Cluster has 2 masters, and a lock needs at least 3"}},
			{"empty --cluster", nil, []string{"status", "--cluster", "", name}, exitUsage, []string{"--cluster is empty"}},
			{"demo on a cluster", []string{EnvCluster + "=" + seeds[0]}, []string{"demo"},
				exitUsage, []string{"demo runs on independent nodes, not a Redis Cluster"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := cli(t, tc.env, tc.args...)
				if r.code != tc.code || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "redlock: ") {
					t.Errorf("exit %d, want %d; stdout %q; stderr %q, want one line", r.code, tc.code, r.stdout, r.stderr)
				}
				for _, w := range tc.want {
					if !strings.Contains(r.stderr, w) {
						t.Errorf("stderr %q lacks %q", r.stderr, w)
					}
				}
			})
		}
	})
}

// checkClusterKey checks that key is name under a numeric hash tag, that
// its slot is slot, and that the master at addr owns that slot: a command
// on the key is not redirected.
func checkClusterKey(t *testing.T, addr, key string, slot int, name string) {
	t.Helper()
	tag, ok := strings.CutSuffix(key, name)
	if !ok || len(tag) < 3 || tag[0] != '{' || tag[len(tag)-1] != '}' || strings.Trim(tag[1:len(tag)-1], "0123456789") != "" {
		t.Errorf("key %q on %s is not %s under a numeric hash tag ({n}%s)", key, addr, name, name)
		return
	}
	if got, err := redis.Int(redisDo(t, addr, "CLUSTER", "KEYSLOT", key)); err != nil || got != slot {
		t.Errorf("CLUSTER KEYSLOT %s: %d, %v; the CLI says slot %d", key, got, err, slot)
	}
	if _, err := redisDo(t, addr, "EXISTS", key); err != nil {
		t.Errorf("EXISTS %s on %s: %v; want its slot %d owned there", key, addr, err, slot)
	}
}

// checkMasters checks that addrs are the cluster's 3 masters, each once.
func checkMasters(t *testing.T, addrs, masters []string) {
	t.Helper()
	got, want := slices.Sorted(slices.Values(addrs)), slices.Sorted(slices.Values(masters))
	if !slices.Equal(got, want) {
		t.Errorf("nodes at %v, want the masters %v, each once", addrs, masters)
	}
}

// redisDo runs one command on the server at addr, on a connection of its
// own (not following redirections).
func redisDo(t *testing.T, addr, cmd string, args ...any) (any, error) {
	t.Helper()
	conn, err := redis.Dial("tcp", addr, redis.DialConnectTimeout(2*time.Second), redis.DialReadTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.Do(cmd, args...)
}
