package main

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// TestSDL writes, reads, lists, removes and watches SDL data on real
// nodes, checking the keys land in the "{ns},key" wire format.
func TestSDL(t *testing.T) {
	c := redistest.Start(t, 2)
	env := []string{}
	flags := []string{"--nodes", strings.Join(c.URLs(), ",")}
	sdl := func(args ...string) result {
		t.Helper()
		return cli(t, env, append(append([]string{"sdl"}, args...), flags...)...)
	}
	if r := sdl("set", "ns1", "a", "1", "b", "two words"); r.code != 0 {
		t.Fatalf("set: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := sdl("set", "ns2", "x", "\x01bin"); r.code != 0 {
		t.Fatalf("set: exit %d, stderr %q", r.code, r.stderr)
	}
	// ns1 lives on instance crc32("ns1") % 2, as in ricsdl and sdlgo.
	found := 0
	for _, nd := range c.Nodes {
		if v, _ := nd.Do("GET", "{ns1},b").([]byte); string(v) == "two words" {
			found++
		}
	}
	if found != 1 {
		t.Errorf("{ns1},b found on %d instances, want 1", found)
	}
	if r := sdl("get", "ns1", "a", "b"); r.code != 0 || r.stdout != "a: 1\nb: two words\n" {
		t.Errorf("get: exit %d, stdout %q", r.code, r.stdout)
	}
	if r := sdl("get", "ns2", "x"); r.stdout != `x: "\x01bin"`+"\n" {
		t.Errorf("get of a binary value: %q", r.stdout)
	}
	if r := sdl("get", "--raw", "ns1", "b"); r.stdout != "two words" {
		t.Errorf("get --raw: %q", r.stdout)
	}
	if r := sdl("get", "ns1", "a", "nope"); r.code != exitFailure || r.stdout != "a: 1\n" || !strings.Contains(r.stderr, "nope") {
		t.Errorf("get of a missing key: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := sdl("set", "--if-absent", "ns1", "a", "9"); r.code != exitFailure {
		t.Errorf("set --if-absent of an existing key: exit %d", r.code)
	}
	if r := sdl("keys", "ns1"); r.stdout != "a\nb\n" {
		t.Errorf("keys: %q", r.stdout)
	}
	if r := sdl("keys", "ns1", "b*"); r.stdout != "b\n" {
		t.Errorf("keys b*: %q", r.stdout)
	}
	if r := sdl("namespaces"); r.stdout != "ns1\nns2\n" {
		t.Errorf("namespaces: %q (stderr %q)", r.stdout, r.stderr)
	}
	if r := sdl("rm", "ns1", "a"); r.code != 0 {
		t.Errorf("rm: exit %d", r.code)
	}
	if r := sdl("rm", "--all", "ns2"); r.code != 0 {
		t.Errorf("rm --all: exit %d", r.code)
	}
	if r := sdl("namespaces"); r.stdout != "ns1\n" {
		t.Errorf("namespaces after rm: %q", r.stdout)
	}

	// The DBAAS_* variables of the RIC platform configure it as well.
	dbaas := []string{"DBAAS_SERVICE_HOST=127.0.0.1", "DBAAS_SERVICE_PORT=" + strconv.Itoa(c.Nodes[0].Port)}
	if r := cli(t, dbaas, "sdl", "set", "envns", "k", "v"); r.code != 0 {
		t.Fatalf("set with DBAAS_*: exit %d, stderr %q", r.code, r.stderr)
	}
	if v, _ := c.Nodes[0].Do("GET", "{envns},k").([]byte); string(v) != "v" {
		t.Errorf("DBAAS_* write landed elsewhere: %q", v)
	}

	// watch prints events published by set --publish and rm --publish.
	watch := exec.Command(binary, append([]string{"sdl", "watch", "--count", "2", "ns1", "ch1", "ch2"}, flags...)...)
	watch.Env = cleanEnv()
	out, errb := &syncBuffer{}, &syncBuffer{}
	watch.Stdout, watch.Stderr = out, errb
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- watch.Wait() }()
	defer watch.Process.Kill()
	waitFor(t, 10*time.Second, "watch to subscribe", func() bool { return strings.Contains(errb.String(), "watching") })
	if r := sdl("set", "--publish", "ch1:first", "ns1", "c", "3"); r.code != 0 {
		t.Fatalf("set --publish: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := sdl("rm", "--publish", "ch2:gone", "ns1", "c"); r.code != 0 {
		t.Fatalf("rm --publish: exit %d, stderr %q", r.code, r.stderr)
	}
	select {
	case err := <-done:
		if err != nil || out.String() != "ch1: first\nch2: gone\n" {
			t.Errorf("watch: %v, stdout %q, stderr %q", err, out.String(), errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("watch did not exit after 2 events; stdout %q", out.String())
	}
}
