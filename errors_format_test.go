package redlock_test

import (
	"context"
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
	"ErrNodeBusy":          redlock.ErrNodeBusy,
	"ErrContested":         redlock.ErrContested,
	"ErrNotVoting":         redlock.ErrNotVoting,
	"ErrReplicaAck":        redlock.ErrReplicaAck,
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

// oneLine fails unless err's message is one line with the package prefix
// once, at its start.
func oneLine(t *testing.T, what string, err error) {
	t.Helper()
	msg := err.Error()
	if !strings.HasPrefix(msg, "redlock: ") || strings.Count(msg, "redlock: ") != 1 || strings.Contains(msg, "\n") {
		t.Errorf("%s: %q, want one line with one \"redlock: \" prefix", what, msg)
	}
}

// TestErrorsOneLine: the errors of failed rounds, closed factories,
// InitRedisNodes and Do after a loss are one line with one prefix, and
// still match their outcome, the node errors and the caller's own error.
func TestErrorsOneLine(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	down := []string{"redis://127.0.0.1:1", "redis://127.0.0.1:2", "redis://127.0.0.1:3"}
	f, err := redlock.NewFactoryFromURLs(down, redlock.WithRetryTimes(1), redlock.WithRetryDelay(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var ne *redlock.NodeError
	_, err = f.NewLock("x").TryAcquire(ctx)
	oneLine(t, "TryAcquire with every node down", err)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.As(err, &ne) || !strings.Contains(err.Error(), "; node ") {
		t.Errorf("TryAcquire with every node down: %v, want ErrNotAcquired and the node errors", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = f.NewLock("x").Acquire(wctx)
	cancel()
	oneLine(t, "Acquire with every node down", err)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ne) {
		t.Errorf("Acquire with every node down: %v", err)
	}
	f.Close()
	_, err = f.NewLock("x").Acquire(ctx)
	oneLine(t, "Acquire after Close", err)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, redlock.ErrClosed) {
		t.Errorf("Acquire after Close: %v", err)
	}

	c, pools := cluster(t, 3)
	f2, err := redlock.NewFactory(pools)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	err = f2.Do(ctx, "do", func(ctx context.Context) error {
		for _, n := range c.Nodes {
			n.Do("DEL", "do")
		}
		<-ctx.Done()
		return ctx.Err()
	})
	oneLine(t, "Do after a loss", err)
	if !errors.Is(err, redlock.ErrLockLost) || !errors.Is(err, context.Canceled) || !strings.HasSuffix(err.Error(), "; fn returned: context canceled") {
		t.Errorf("Do after a loss: %q, want ErrLockLost and fn's context.Canceled", err)
	}
	l := f2.NewLock("rel")
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	c.Nodes[1].Kill()
	c.Nodes[2].Kill()
	err = l.Release(ctx)
	oneLine(t, "Release with 2 of 3 nodes down", err)
	if !errors.Is(err, redlock.ErrNoQuorum) || !errors.As(err, &ne) {
		t.Errorf("Release with 2 of 3 nodes down: %v", err)
	}
	err = redlock.InitRedisNodes(ctx, pools)
	oneLine(t, "InitRedisNodes with 2 of 3 nodes down", err)
	if !errors.As(err, &ne) || ne.Node == 0 || strings.Count(err.Error(), "node ") != 2 {
		t.Errorf("InitRedisNodes with 2 of 3 nodes down: %v, want both node errors", err)
	}
}
