package redlock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

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
