package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// TestBenchEmbedded runs the short benchmark on embedded nodes: it must
// finish, show every workload and label its numbers as not representative.
func TestBenchEmbedded(t *testing.T) {
	r := cli(t, nil, "bench", "--duration", "200ms")
	if r.code != 0 {
		t.Fatalf("bench: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"NOT REPRESENTATIVE", "W1 ", "W2 ", "W3 ", "redlock", "floor", "OVERLAPS"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("bench output lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "running W3 redlock") {
		t.Errorf("no progress on stderr: %q", r.stderr)
	}
}

// TestBenchJSON runs it on real nodes with --json: the numbers are marked
// representative, every run did work, and the shared key never had two
// holders.
func TestBenchJSON(t *testing.T) {
	c := redistest.Start(t, 3)
	r := cli(t, nodesEnv(c.URLs()), "bench", "--json", "--duration", "500ms")
	if r.code != 0 {
		t.Fatalf("bench: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, r.stdout)
	}
	if rep.Embedded || !rep.Representative || len(rep.Nodes) != 3 || len(rep.Results) != 5 {
		t.Fatalf("report: %+v", rep)
	}
	for _, res := range rep.Results {
		if res.Ops == 0 || res.Overlaps != 0 || res.Cycle.P50 <= 0 {
			t.Errorf("%s %s: ops %d, overlaps %d, p50 %v, first error %q", res.Workload, res.Target, res.Ops, res.Overlaps, res.Cycle.P50, res.FirstError)
		}
	}
	for _, nd := range c.Nodes {
		if keys, _ := nd.Do("KEYS", "redlock-bench:*").([]any); len(keys) != 0 {
			t.Errorf("node %s keeps %d bench keys, e.g. %s", nd.Addr(), len(keys), keys[0])
		}
	}
}

// TestBenchOnDevNodes runs it on the nodes of `redlock dev`, given as
// configured nodes: bench must find them to be embedded and say that its
// numbers are not representative, in text and in JSON.
func TestBenchOnDevNodes(t *testing.T) {
	d := startDev(t)
	r := cli(t, d.env, "bench", "--duration", "100ms")
	if r.code != 0 {
		t.Fatalf("bench: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"configured nodes, embedded", "NOT REPRESENTATIVE: the nodes are embedded", "'redlock dev'"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("bench output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = cli(t, d.env, "bench", "--json", "--duration", "100ms")
	var rep benchReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("bench --json: exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if !rep.Embedded || rep.Representative {
		t.Errorf("report on dev nodes: embedded %v, representative %v; want true, false", rep.Embedded, rep.Representative)
	}
}
