package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockplus/redlock/internal/testkit/redistest"
	"github.com/redlockplus/redlock/sdlstore"
)

// healthcheck: 0 when healthy, 1 when an instance answers but lacks its
// replicas, 69 when one cannot be reached, 64 for a bad node count; the
// table and --json say the same.
func TestSDLHealthcheck(t *testing.T) {
	c := redistest.Start(t, 2)
	flags := []string{"--nodes", strings.Join(c.URLs(), ",")}
	hc := func(env []string, args ...string) result {
		t.Helper()
		return cli(t, env, append(append([]string{"sdl", "healthcheck"}, args...), flags...)...)
	}
	r := hc(nil)
	if r.code != 0 || strings.Count(r.stdout, " healthy\n") != 2 || !strings.Contains(r.stdout, c.Nodes[1].Addr()+"  master") ||
		!strings.HasSuffix(r.stdout, "\nhealthy: 2 of 2 instances healthy; each should have 1 node, a master and no replica (--node-count, DBAAS_NODE_COUNT)\n") {
		t.Fatalf("healthcheck: exit %d, stdout:\n%s\nstderr %q", r.code, r.stdout, r.stderr)
	}
	r = hc(nil, "--json")
	var h sdlstore.Health
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || r.code != 0 || !h.Healthy() || len(h.Instances) != 2 ||
		h.Instances[0].Addr != c.Nodes[0].Addr() || h.Instances[1].Role != "master" {
		t.Fatalf("healthcheck --json: exit %d, %v, %+v", r.code, err, h)
	}
	r = hc(nil, "--node-count", "2")
	if r.code != exitFailure || !strings.Contains(r.stdout, "unhealthy: 0 of 1 replicas online") || !strings.Contains(r.stderr, "instance 0 (0 of 1 replicas online)") ||
		!strings.HasSuffix(r.stdout, "\nUNHEALTHY: 0 of 2 instances healthy; each should have 2 nodes, a master and 1 replica online (--node-count, DBAAS_NODE_COUNT)\n") {
		t.Fatalf("healthcheck --node-count 2: exit %d, stdout:\n%s\nstderr %q", r.code, r.stdout, r.stderr)
	}
	if r = hc([]string{"DBAAS_NODE_COUNT=2"}); r.code != exitFailure {
		t.Fatalf("healthcheck with DBAAS_NODE_COUNT=2: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, bad := range [][]string{{"--node-count", "0"}, {"extra-arg"}} {
		if r = hc(nil, bad...); r.code != exitUsage {
			t.Fatalf("healthcheck %v: exit %d, want %d", bad, r.code, exitUsage)
		}
	}
	if r = hc([]string{"DBAAS_NODE_COUNT=three"}); r.code != exitUsage || !strings.Contains(r.stderr, "DBAAS_NODE_COUNT") {
		t.Fatalf("healthcheck with DBAAS_NODE_COUNT=three: exit %d, stderr %q", r.code, r.stderr)
	}
	c.Nodes[1].Kill()
	r = hc(nil)
	if r.code != exitUnavailable || !strings.Contains(r.stdout, "unreachable: ") || !strings.Contains(r.stdout, "UNHEALTHY") ||
		!strings.Contains(r.stderr, "instance 1 cannot be reached") {
		t.Fatalf("healthcheck with instance 1 down: exit %d, stdout:\n%s\nstderr %q", r.code, r.stdout, r.stderr)
	}
}

// healthcheck through DBAAS_* with a sentinel shows the sentinel's table.
func TestSDLHealthcheckSentinel(t *testing.T) {
	master := redistest.Start(t, 1).Nodes[0]
	sent := redistest.StartSentinel(t, "clim", master, time.Second)
	env := []string{"DBAAS_SERVICE_HOST=127.0.0.1", "DBAAS_SERVICE_SENTINEL_PORT=" + strconv.Itoa(sent.Port), "DBAAS_MASTER_NAME=clim"}
	r := cli(t, env, "sdl", "healthcheck")
	want := sent.Addr() + "  clim         " + master.Addr()
	if r.code != 0 || !strings.Contains(r.stdout, "SENTINEL") || !strings.Contains(r.stdout, want) {
		t.Fatalf("healthcheck with a sentinel: exit %d, stdout:\n%s\nstderr %q (want a row with %q)", r.code, r.stdout, r.stderr, want)
	}
	sent.Kill()
	if r = cli(t, env, "sdl", "healthcheck"); r.code != exitUnavailable {
		t.Fatalf("healthcheck with the sentinel down: exit %d, stdout:\n%s", r.code, r.stdout)
	}
}

// statistics: a row per instance from INFO, --json, and 69 with an
// instance down (the others still shown).
func TestSDLStatistics(t *testing.T) {
	c := redistest.Start(t, 2)
	flags := []string{"--nodes", strings.Join(c.URLs(), ",")}
	if r := cli(t, nil, append([]string{"sdl", "set", "stats", "a", "1", "b", "2"}, flags...)...); r.code != 0 {
		t.Fatalf("set: exit %d, stderr %q", r.code, r.stderr)
	}
	home := 0
	if v, _ := c.Nodes[1].Do("EXISTS", "{stats},a").(int64); v == 1 {
		home = 1
	}
	r := cli(t, nil, append([]string{"sdl", "statistics"}, flags...)...)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "INSTANCE") ||
		!strings.Contains(lines[1+home], c.Nodes[home].Addr()+"  2 ") || !strings.Contains(lines[1], "KiB") {
		t.Fatalf("statistics: exit %d, stdout:\n%s\nstderr %q", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, append([]string{"sdl", "statistics", "--json"}, flags...)...)
	var st []sdlstore.InstanceStats
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || r.code != 0 || len(st) != 2 || st[home].Keys != 2 ||
		st[1-home].Keys != 0 || st[0].UsedMemory <= 0 || st[0].ConnectedClients < 1 || st[1].Addr != c.Nodes[1].Addr() {
		t.Fatalf("statistics --json: exit %d, %v, %+v", r.code, err, st)
	}
	c.Nodes[0].Kill()
	r = cli(t, nil, append([]string{"sdl", "statistics"}, flags...)...)
	if r.code != exitUnavailable || !strings.Contains(r.stdout, "unreachable: ") || !strings.Contains(r.stdout, c.Nodes[1].Addr()) ||
		!strings.Contains(r.stderr, "instance 0") {
		t.Fatalf("statistics with instance 0 down: exit %d, stdout:\n%s\nstderr %q", r.code, r.stdout, r.stderr)
	}
	if r = cli(t, nil, append([]string{"sdl", "statistics", "x"}, flags...)...); r.code != exitUsage {
		t.Fatalf("statistics with an argument: exit %d", r.code)
	}
}

// namespaces --wide and --json give each namespace's instance and key count.
func TestSDLNamespacesWide(t *testing.T) {
	c := redistest.Start(t, 2)
	flags := []string{"--nodes", strings.Join(c.URLs(), ",")}
	for _, args := range [][]string{{"nsx", "a", "1", "b", "2"}, {"nsy", "c", "3"}} {
		if r := cli(t, nil, append(append([]string{"sdl", "set"}, args...), flags...)...); r.code != 0 {
			t.Fatalf("set: exit %d, stderr %q", r.code, r.stderr)
		}
	}
	r := cli(t, nil, append([]string{"sdl", "namespaces", "--json"}, flags...)...)
	var list []sdlstore.NamespaceInfo
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || r.code != 0 || len(list) != 2 ||
		list[0].Name != "nsx" || list[0].Keys != 2 || list[1].Name != "nsy" || list[1].Keys != 1 {
		t.Fatalf("namespaces --json: exit %d, %v, %+v", r.code, err, list)
	}
	r = cli(t, nil, append([]string{"sdl", "namespaces", "--wide"}, flags...)...)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	wantX := "nsx        " + strconv.Itoa(list[0].Instance) + "         " + c.Nodes[list[0].Instance].Addr() + "  2"
	if r.code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "NAMESPACE") || lines[1] != wantX {
		t.Fatalf("namespaces --wide: exit %d, stdout:\n%s\nwant row %q", r.code, r.stdout, wantX)
	}
}
