package pipeline

import (
	"context"
	"net"
	"runtime"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/gomodule/redigo/redis"
)

// ConnectTimeout bounds the dial of a socket (SocketDialer), as it bounds
// the dials of redlock.NewPool's pools.
const ConnectTimeout = 5 * time.Second

// socketConn is a connection dialled by SocketDialer, with its socket. It
// keeps the optional interfaces of redigo's connections, which the Conn's
// reader and its setup use.
type socketConn struct {
	redigoConn
	sock net.Conn
}

type redigoConn interface {
	redis.ConnWithTimeout
	redis.ConnWithContext
}

func (c socketConn) Socket() net.Conn { return c.sock }

// SocketDialer returns a Dial for a node given as a redis:// URL and the
// dial options of its pool: it dials as redis.DialURLContext does, on a
// socket it keeps, so that the Conn writes its batches to the socket
// itself (Socketed). It returns nil for any other scheme, such as
// rediss://, whose bytes redigo must encrypt. When opts carry a dialler of
// the caller's (DialNetDial, DialContextFunc), that one dials, and the
// connection is written through redigo.
func SocketDialer(rawURL string, opts []redis.DialOption) func(context.Context) (redis.Conn, error) {
	if !strings.HasPrefix(rawURL, "redis://") {
		return nil
	}
	return func(ctx context.Context) (redis.Conn, error) {
		var sock net.Conn
		keep := redis.DialContextFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: ConnectTimeout, KeepAlive: 5 * time.Minute}
			c, err := d.DialContext(ctx, network, addr)
			sock = c
			return c, err
		})
		c, err := redis.DialURLContext(ctx, rawURL, append([]redis.DialOption{keep}, opts...)...)
		rc, full := c.(redigoConn)
		if err != nil || sock == nil || !full {
			return c, err
		}
		return socketConn{redigoConn: rc, sock: sock}, nil
	}
}

// PoolFacts is what the maker of a redigo pool noted about it, for those
// that reach its node: the node's address, for messages ("" when not
// known), and the Dial of a socket of the Conn's own (SocketDialer; nil:
// the Conn borrows from the pool).
type PoolFacts struct {
	Addr string
	Dial func(context.Context) (redis.Conn, error)
}

// pools remembers the facts of each pool noted, without keeping the pool
// alive.
var pools sync.Map // weak.Pointer[redis.Pool] -> PoolFacts

// RememberPool notes the facts of p.
func RememberPool(p *redis.Pool, f PoolFacts) {
	key := weak.Make(p)
	pools.Store(key, f)
	runtime.AddCleanup(p, func(k weak.Pointer[redis.Pool]) { pools.Delete(k) }, key)
}

// FactsOf returns what was noted of p; the zero PoolFacts when nothing was.
func FactsOf(p *redis.Pool) PoolFacts {
	f, _ := pools.Load(weak.Make(p))
	facts, _ := f.(PoolFacts)
	return facts
}
