package pubsub_test

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pubsub"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// gate is a TCP proxy in front of a node that can hold what the client
// sends and let it through a given number of bytes at a time, so a test can
// make the server execute some of the commands already written and not the
// rest. Replies pass freely.
type gate struct {
	t    *testing.T
	ln   net.Listener
	node string

	mu     sync.Mutex
	held   bool
	buf    []byte
	server net.Conn
	wg     sync.WaitGroup
}

// newGate listens on a free port until the test ends.
func newGate(t *testing.T, node *redistest.Node) *gate {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	g := &gate{t: t, ln: ln, node: node.Addr()}
	g.wg.Add(1)
	go g.accept()
	t.Cleanup(func() {
		ln.Close()
		g.mu.Lock()
		if g.server != nil {
			g.server.Close()
		}
		g.mu.Unlock()
		g.wg.Wait()
	})
	return g
}

func (g *gate) dial(ctx context.Context) (redis.Conn, error) {
	return redis.DialContext(ctx, "tcp", g.ln.Addr().String())
}

// accept proxies one client connection at a time.
func (g *gate) accept() {
	defer g.wg.Done()
	for {
		client, err := g.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", g.node)
		if err != nil {
			client.Close()
			continue
		}
		g.mu.Lock()
		g.server = server
		g.mu.Unlock()
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			_, _ = io.Copy(client, server)
			client.Close()
		}()
		g.upstream(client, server)
		server.Close()
	}
}

// upstream forwards or holds what the client sends.
func (g *gate) upstream(client, server net.Conn) {
	b := make([]byte, 64<<10)
	for {
		n, err := client.Read(b)
		if err != nil {
			return
		}
		g.mu.Lock()
		if g.held {
			g.buf = append(g.buf, b[:n]...)
		} else if _, err := server.Write(b[:n]); err != nil {
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
	}
}

// hold keeps what the client sends from now on.
func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = true
}

// buffered returns how many bytes are held.
func (g *gate) buffered() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.buf)
}

// release lets the first n held bytes through; n < 0 lets all through and
// stops holding.
func (g *gate) release(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n < 0 {
		n, g.held = len(g.buf), false
	}
	if _, err := g.server.Write(g.buf[:n]); err != nil {
		g.t.Errorf("gate: %v", err)
	}
	g.buf = g.buf[n:]
}

// command is how redigo writes a command of string arguments.
func command(args ...string) string {
	out := "*" + strconv.Itoa(len(args)) + "\r\n"
	for _, a := range args {
		out += "$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n"
	}
	return out
}

// A channel unsubscribed and subscribed again counts as confirmed only when
// the reply to the last SUBSCRIBE came: the server is made to execute the
// UNSUBSCRIBE and answer it while the SUBSCRIBE is still held back, and
// WaitConfirmed keeps waiting meanwhile, as it must, since a publish then
// reaches nobody.
func TestConfirmationWaitsForTheLastSubscribe(t *testing.T) {
	node := start(t)
	g := newGate(t, node)
	s, r := newSub(t, node, func(c *pubsub.Config) {
		c.Dial = g.dial
		c.HealthInterval = time.Minute // no PING among the held bytes
	})
	must(t, s.Subscribe("c"))
	must(t, s.WaitConfirmed(ctx(t), "c"))
	recv(t, r.confirms, "first confirmation")

	g.hold()
	unsub, sub := command("UNSUBSCRIBE", "c"), command("SUBSCRIBE", "c")
	must(t, s.Unsubscribe("c"))
	eventually(t, "UNSUBSCRIBE written", func() bool { return g.buffered() == len(unsub) })
	must(t, s.Subscribe("c"))
	eventually(t, "SUBSCRIBE written", func() bool { return g.buffered() == len(unsub)+len(sub) })
	waited := make(chan error, 1)
	go func() { waited <- s.WaitConfirmed(context.Background(), "c") }()

	g.release(len(unsub))
	eventually(t, "server unsubscribed", func() bool { return numsub(t, node, "c") == 0 })
	if n := publish(t, node, "c", "unheard"); n != 0 {
		t.Fatalf("publish reached %d clients between the commands", n)
	}
	none(t, waited, 300*time.Millisecond, "WaitConfirmed return before the last SUBSCRIBE was answered")
	none(t, r.confirms, 0, "confirmation before the last SUBSCRIBE was answered")

	g.release(-1)
	must(t, recv(t, waited, "WaitConfirmed"))
	if ch := recv(t, r.confirms, "confirmation"); ch != "c" {
		t.Fatalf("confirmed %q", ch)
	}
	if n := publish(t, node, "c", "heard"); n != 1 {
		t.Fatalf("publish reached %d clients after confirmation, want 1", n)
	}
	if m := recv(t, r.msgs, "message"); m != (msg{"c", "heard"}) {
		t.Fatalf("got %+v", m)
	}
}
