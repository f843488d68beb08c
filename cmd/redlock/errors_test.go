package main

import (
	"strings"
	"testing"

	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// TestErrors checks every error a user can make or meet: one line on
// stderr starting with "redlock: ", nothing on stdout, the documented exit
// code, and no stack trace.
func TestErrors(t *testing.T) {
	c := redistest.Start(t, 3)
	good := "--nodes=" + strings.Join(c.URLs(), ",")
	down := "--nodes=redis://127.0.0.1:1,redis://127.0.0.1:2,redis://127.0.0.1:3"
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"unknown command", nil, []string{"stauts"}, exitUsage, `unknown command "stauts" (did you mean "status"?)`},
		{"unknown sdl command", nil, []string{"sdl", "fetch"}, exitUsage, `unknown sdl command "fetch"`},
		{"unknown flag", nil, []string{"run", "--bogus", "x", "--", "true"}, exitUsage, "unknown flag: --bogus"},
		{"missing --", []string{good}, []string{"run", "x", "true"}, exitUsage, "missing '--'"},
		{"missing command after --", nil, []string{"run", good, "x", "--"}, exitUsage, "missing the command after '--'"},
		{"missing name", nil, []string{"run", good, "--", "true"}, exitUsage, "missing the lock NAME"},
		{"two names", nil, []string{"run", good, "a", "b", "--", "true"}, exitUsage, "one lock NAME"},
		{"bad duration", nil, []string{"run", good, "--ttl", "abc", "x", "--", "true"}, exitUsage, `invalid argument "abc" for "--ttl"`},
		{"bad wait", nil, []string{"run", good, "--wait", "-1s", "x", "--", "true"}, exitUsage, "--wait"},
		{"wait and no-wait", nil, []string{"run", good, "--wait", "1s", "--no-wait", "x", "--", "true"}, exitUsage, "no-wait"},
		{"ttl too small", nil, []string{"run", good, "--ttl", "1ms", "x", "--", "true"}, exitUsage, "ttl"},
		{"bad quorum", nil, []string{"run", good, "--quorum", "1", "x", "--", "true"}, exitUsage, "quorum 1"},
		{"bad URL scheme", nil, []string{"run", "--nodes", "http://a,redis://b,redis://c", "x", "--", "true"}, exitUsage, `node URL "http://a": scheme must be redis or rediss`},
		{"bad URL", nil, []string{"status", "--nodes", "redis://a:notaport,redis://b,redis://c", "x"}, exitUsage, "node URL"},
		{"empty node entry", nil, []string{"status", "--nodes", "redis://a,,redis://c", "x"}, exitUsage, "empty entry"},
		{"repeated node URL", nil, []string{"run", "--nodes", "redis://a:1,redis://b:2,redis://a:1", "x", "--", "true"}, exitUsage, "node 2 repeats the URL of node 0"},
		{"repeated node URL for status", []string{EnvNodes + "=a:1,b:2,a:1"}, []string{"status", "x"}, exitUsage, "node 2 repeats the URL of node 0"},
		{"fewer than 3 nodes", nil, []string{"run", "--nodes", "redis://a:1,redis://b:2", "x", "--", "true"}, exitUsage, "at least 3 nodes are needed, got 2"},
		{"fewer than 3 nodes from env", []string{EnvNodes + "=redis://a:1"}, []string{"status", "x"}, exitUsage, "at least 3 nodes are needed, got 1"},
		{"no nodes", nil, []string{"run", "x", "--", "true"}, exitUsage, "no nodes configured"},
		{"unreachable nodes", nil, []string{"run", down, "x", "--", "true"}, exitUnavailable, "0 of 3 nodes answered, 2 needed"},
		{"unreachable nodes for status", nil, []string{"status", down, "x"}, exitUnavailable, "only 0 of 3 nodes answered"},
		{"status without name", []string{EnvNodes + "=" + strings.Join(c.URLs(), ",")}, []string{"status"}, exitUsage, "status takes one lock NAME, got 0"},
		{"sdl without instances", nil, []string{"sdl", "get", "ns", "k"}, exitUsage, "no SDL instances configured"},
		{"sdl unreachable", nil, []string{"sdl", "get", "--nodes", "redis://127.0.0.1:1", "ns", "k"}, exitUnavailable, "sdlstore"},
		{"sdl bad namespace", nil, []string{"sdl", "get", good, "a{b", "k"}, exitUsage, "namespace"},
		{"sdl set odd args", nil, []string{"sdl", "set", good, "ns", "k"}, exitUsage, "KEY VALUE pairs"},
		{"demo bad workers", nil, []string{"demo", "--workers", "1"}, exitUsage, "--workers 1"},
		{"dev bad port", nil, []string{"dev", "--port", "70000"}, exitUsage, "--port 70000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, tc.env, tc.args...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d; stderr %q", r.code, tc.code, r.stderr)
			}
			if r.stdout != "" && tc.name != "unreachable nodes for status" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			if !strings.HasPrefix(r.stderr, "redlock: ") || strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") {
				t.Errorf("stderr %q is not one line starting with \"redlock: \"", r.stderr)
			}
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr %q does not contain %q", r.stderr, tc.want)
			}
			if strings.Contains(r.stderr, "redlock: redlock") || strings.Contains(r.stderr, `for "redlock`) {
				t.Errorf("stderr %q repeats the program's name", r.stderr)
			}
		})
	}
}

// TestHelpAndCompletion checks that help and shell completion work and
// exit 0.
func TestHelpAndCompletion(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--help"},
		{"run", "--help"},
		{"sdl"},
		{"completion", "bash"},
		{"completion", "zsh"},
		{"completion", "fish"},
		{"--version"},
	} {
		r := cli(t, nil, args...)
		if r.code != 0 || r.stdout == "" {
			t.Errorf("redlock %v: exit %d, %d bytes of stdout, stderr %q", args, r.code, len(r.stdout), r.stderr)
		}
	}
	r := cli(t, nil, "__complete", "r")
	if !strings.Contains(r.stdout, "run") {
		t.Errorf("completion of \"r\": %q", r.stdout)
	}
}
