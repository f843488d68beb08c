package delayproxy

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m, nil) }

// TestDelayProxy checks that the proxy adds about its round trip and
// forwards both ways, and that close leaves no goroutine (TestMain).
func TestDelayProxy(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	px, err := Start(echo.Addr().String(), 40*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", px.Addr())
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	for range 3 {
		start := time.Now()
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "hello" {
			t.Fatalf("echo %q, %v", buf, err)
		}
		if rtt := time.Since(start); rtt < 40*time.Millisecond || rtt > 2*time.Second {
			t.Fatalf("round trip %v through a 40ms proxy", rtt)
		}
	}
	// A request still in flight when the proxy closes is dropped cleanly.
	if _, err := c.Write([]byte("late!")); err != nil {
		t.Fatal(err)
	}
	px.Close()
	c.Close()
}
