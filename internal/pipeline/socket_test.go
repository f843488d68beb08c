package pipeline_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pipeline"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// TestSocketDialerKeepsTheSocket: a redis:// node is dialled on a socket
// the Conn may write to; a dialler of the caller's, and TLS, are left to
// redigo.
func TestSocketDialerKeepsTheSocket(t *testing.T) {
	c := redistest.Start(t, 1)
	url := "redis://" + c.Nodes[0].Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	rc, err := pipeline.SocketDialer(url, nil)(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	s, ok := rc.(pipeline.Socketed)
	if !ok || s.Socket() == nil {
		t.Fatalf("%T: no socket to write to", rc)
	}
	if _, ok := rc.(redis.ConnWithTimeout); !ok {
		t.Fatal("the connection lost redigo's ConnWithTimeout, which the reader needs")
	}

	own := redis.DialNetDial(func(network, addr string) (net.Conn, error) { return net.Dial(network, addr) })
	rc2, err := pipeline.SocketDialer(url, []redis.DialOption{own})(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc2.Close()
	if _, ok := rc2.(pipeline.Socketed); ok {
		t.Fatal("a connection of the caller's dialler was taken as a socket of ours")
	}
	if _, err := rc2.Do("PING"); err != nil {
		t.Fatal(err)
	}

	if pipeline.SocketDialer("rediss://"+c.Nodes[0].Addr(), nil) != nil {
		t.Fatal("a TLS node got a socket dialler, whose writes would bypass the encryption")
	}
}
