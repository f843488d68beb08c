package redlock_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

// sentinels are every exported sentinel error of the package.
var sentinels = map[string]error{
	"ErrNotAcquired":       redlock.ErrNotAcquired,
	"ErrLockLost":          redlock.ErrLockLost,
	"ErrInvalidOperation":  redlock.ErrInvalidOperation,
	"ErrInvalidArgument":   redlock.ErrInvalidArgument,
	"ErrNoQuorum":          redlock.ErrNoQuorum,
	"ErrClosed":            redlock.ErrClosed,
	"ErrFenceNotCommitted": redlock.ErrFenceNotCommitted,
	"ErrNoLeader":          redlock.ErrNoLeader,
}

// TestSentinels: every sentinel matches ErrRedlock and itself, none
// matches another (but ErrFenceNotCommitted is also an ErrNotAcquired),
// each message is "redlock: " and lower case, and the package overview
// (doc.go) lists every exported Err variable of the package by name, so
// that go doc shows them all.
func TestSentinels(t *testing.T) {
	for name, s := range sentinels {
		if !errors.Is(s, redlock.ErrRedlock) || !errors.Is(s, s) {
			t.Errorf("%s does not match ErrRedlock and itself", name)
		}
		if msg := s.Error(); !strings.HasPrefix(msg, "redlock: ") || strings.ToLower(msg) != msg || strings.Count(msg, "redlock: ") != 1 {
			t.Errorf("%s: message %q", name, msg)
		}
		for other, o := range sentinels {
			want := name == other || name == "ErrFenceNotCommitted" && other == "ErrNotAcquired"
			if errors.Is(s, o) != want {
				t.Errorf("errors.Is(%s, %s) = %v, want %v", name, other, !want, want)
			}
		}
	}
	if errors.Is(redlock.ErrRedlock, redlock.ErrNotAcquired) {
		t.Error("ErrRedlock matches ErrNotAcquired")
	}

	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var overview string
	declared := map[string]bool{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			overview += f.Doc.Text()
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if n.IsExported() && strings.HasPrefix(n.Name, "Err") {
						declared[n.Name] = true
					}
				}
			}
		}
	}
	for name := range declared {
		if name == "ErrRedlock" {
			continue
		}
		if _, ok := sentinels[name]; !ok {
			t.Errorf("%s is not in this test's list of sentinels", name)
		}
		if !strings.Contains(overview, "  - "+name+": ") {
			t.Errorf("the package overview does not list %s with its meaning", name)
		}
	}
	if _, err := os.Stat("doc.go"); err != nil {
		t.Fatal(err)
	}
}

// TestBareAddresses: NewPool and NewFactoryFromURLs read host:port as
// redis://host:port, as the CLI does; a bare address that is not host or
// host:port is an ErrInvalidArgument that says what was expected.
func TestBareAddresses(t *testing.T) {
	c, _ := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	f, err := redlock.NewFactoryFromURLs(c.Addrs())
	if err != nil {
		t.Fatalf("NewFactoryFromURLs(%q): %v", c.Addrs(), err)
	}
	defer f.Close()
	l := f.NewLock("bare")
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := redlock.NewPool(c.Nodes[0].Addr())
	if err != nil {
		t.Fatalf("NewPool(%q): %v", c.Nodes[0].Addr(), err)
	}
	p.Close()
	for _, u := range []string{"localhost", "127.0.0.1:6379/2", ":secret@h:1", "[::1]:6379", "[::1]"} {
		if p, err := redlock.NewPool(u); err != nil {
			t.Errorf("NewPool(%q) = %v", u, err)
		} else {
			p.Close()
		}
	}
	// A bare address and its redis:// form name the same node.
	if _, err := redlock.NewFactoryFromURLs([]string{c.Nodes[0].Addr(), c.Nodes[1].URL(), c.Nodes[0].URL()}); !errors.Is(err, redlock.ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "repeats") {
		t.Errorf("bare and redis:// forms of one node: %v, want a repeated node", err)
	}
	for _, u := range []string{"", "::::", "h:1:2", "h:port"} {
		_, err := redlock.NewPool(u)
		if !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("NewPool(%q) = %v, want ErrInvalidArgument", u, err)
			continue
		}
		if u != "h:port" && !strings.Contains(err.Error(), "neither host:port nor a redis:// or rediss:// URL") {
			t.Errorf("NewPool(%q) = %q, want it to say what a node address is", u, err)
		}
		if _, ferr := redlock.NewFactoryFromURLs([]string{u, c.Nodes[1].URL(), c.Nodes[2].URL()}); !errors.Is(ferr, redlock.ErrInvalidArgument) {
			t.Errorf("NewFactoryFromURLs with %q = %v, want ErrInvalidArgument", u, ferr)
		}
	}
}

// TestTTLBoundMessage: a TTL that is too short is refused with the bound
// that is enforced, the least TTL above its own drift allowance, whatever
// the TTL's sign; that bound is accepted.
func TestTTLBoundMessage(t *testing.T) {
	urls := []string{"redis://127.0.0.1:1", "redis://127.0.0.1:2", "redis://127.0.0.1:3"}
	for _, tc := range []struct {
		ttl   time.Duration
		drift float64
		least string
	}{
		{-time.Second, redlock.DefaultDriftFactor, "3ms"},
		{0, redlock.DefaultDriftFactor, "3ms"},
		{time.Millisecond, redlock.DefaultDriftFactor, "3ms"},
		{2 * time.Millisecond, redlock.DefaultDriftFactor, "3ms"},
		{2900 * time.Microsecond, redlock.DefaultDriftFactor, "3ms"},
		{2 * time.Millisecond, 0, "3ms"},
		{4 * time.Millisecond, 0.5, "5ms"},
		{199 * time.Millisecond, 0.99, "201ms"},
	} {
		_, err := redlock.NewFactoryFromURLs(urls, redlock.WithTTL(tc.ttl), redlock.WithDriftFactor(tc.drift))
		want := "is below " + tc.least + ", the least ttl above its own drift allowance"
		if !errors.Is(err, redlock.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Errorf("WithTTL(%v), drift factor %v: %v, want %q", tc.ttl, tc.drift, err, want)
		}
		least, _ := time.ParseDuration(tc.least)
		f, err := redlock.NewFactoryFromURLs(urls, redlock.WithTTL(least), redlock.WithDriftFactor(tc.drift))
		if err != nil {
			t.Errorf("WithTTL(%v), drift factor %v: %v, want it accepted", least, tc.drift, err)
			continue
		}
		f.Close()
	}
}
