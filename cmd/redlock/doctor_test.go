package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// TestDoctor: three durable nodes are fit (exit 0); a node restarted
// without persistence, a node whose policy may evict lock keys and a
// killed node each make doctor exit 4 with a line that names the node's
// address and the reason; --json says the same.
func TestDoctor(t *testing.T) {
	c := redistest.Start(t, 5)
	env := nodesEnv(c.URLs()[:3])
	if r := cli(t, env, "doctor"); r.code != exitOK || strings.Count(r.stdout, " ok ") != 3 || r.stderr != "" {
		t.Fatalf("doctor on 3 durable nodes: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	c.Nodes[1].RestartVolatile()
	c.Nodes[2].Kill()
	c.Nodes[2].Args = []string{"--maxmemory", "100mb", "--maxmemory-policy", "volatile-lru"}
	c.Nodes[2].Start()
	c.Nodes[4].Kill()
	env = nodesEnv(c.URLs())
	r := cli(t, env, "doctor")
	checkNoCrash(t, r.stderr)
	if r.code != exitUnfit {
		t.Fatalf("doctor with unfit nodes: exit %d, want %d\n%s%s", r.code, exitUnfit, r.stdout, r.stderr)
	}
	out := r.stdout + r.stderr
	for _, want := range []string{
		c.Nodes[1].Addr(), "restart guard",
		c.Nodes[2].Addr(), "volatile-lru",
		c.Nodes[4].Addr(), "unreachable",
		"3 of 5 nodes not fit",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	j := cli(t, env, "doctor", "--json")
	var report []doctorJSON
	if err := json.Unmarshal([]byte(j.stdout), &report); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, j.stdout)
	}
	fit := []bool{true, false, false, true, false}
	for i, n := range report {
		if n.Fit != fit[i] {
			t.Errorf("node %d: fit %v, want %v: %+v", i, n.Fit, fit[i], n)
		}
	}
	if j.code != exitUnfit || len(report) != 5 || report[2].Eviction != "volatile-lru" || !report[0].Durable || report[4].Error == "" {
		t.Errorf("doctor --json: exit %d, %+v", j.code, report)
	}
}

// TestStatusShowsQuarantine: status names a node that restarted without
// persistence as quarantined, in both forms.
func TestStatusShowsQuarantine(t *testing.T) {
	c := redistest.Start(t, 3)
	c.Nodes[0].RestartVolatile()
	env := nodesEnv(c.URLs())
	r := cli(t, env, "status", "q")
	if !strings.Contains(r.stdout, "quarantined") || !strings.Contains(r.stdout, c.Nodes[0].Addr()) || !strings.Contains(r.stdout, "restart guard") {
		t.Errorf("status with a restarted node: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	j := cli(t, env, "status", "--json", "q")
	var st statusJSON
	if err := json.Unmarshal([]byte(j.stdout), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Nodes) != 3 || st.Nodes[0].OutOfVote == "" || st.Nodes[1].OutOfVote != "" {
		t.Errorf("status --json with a restarted node: %+v", st.Nodes)
	}
}

// TestDoctorTTL: --ttl is the restart guard's window, as for a lock of
// that TTL: a node restarted without persistence is unfit under the
// default TTL and fit once it has run for a --ttl of 1s; the summary line
// on stderr names it and what keeps it out.
func TestDoctorTTL(t *testing.T) {
	c := redistest.Start(t, 3)
	c.Nodes[2].RestartVolatile()
	env := nodesEnv(c.URLs())
	r := cli(t, env, "doctor")
	if r.code != exitUnfit || !strings.Contains(r.stderr, c.Nodes[2].Addr()+" (quarantined after a restart)") {
		t.Fatalf("doctor with a fresh volatile node: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	waitFor(t, 10*time.Second, "the volatile node to be fit under --ttl 1s", func() bool {
		r = cli(t, env, "doctor", "--ttl", "1s")
		return r.code == exitOK
	})
	if strings.Count(r.stdout, " ok ") != 3 || !strings.Contains(r.stdout, "not durable") || r.stderr != "" {
		t.Errorf("doctor --ttl 1s once the node has run 1s:\n%s%s", r.stdout, r.stderr)
	}
}

// TestCompactDuration checks the uptime form of doctor's lines.
func TestCompactDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                           "0s",
		10 * time.Second:            "10s",
		2 * time.Minute:             "2m",
		3 * time.Hour:               "3h",
		3*time.Hour + 5*time.Minute: "3h5m",
		3*time.Hour + 7*time.Second: "3h0m7s",
		90 * time.Minute:            "1h30m",
	} {
		if got := compactDuration(d); got != want {
			t.Errorf("compactDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
