package redlock

import (
	"context"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/pipeline"
)

// Pool hands out connections to one Redis node. *redis.Pool satisfies it, and
// so does any wrapper that adds metrics or fault injection.
type Pool interface {
	GetContext(ctx context.Context) (redis.Conn, error)
}

var _ Pool = (*redis.Pool)(nil)

// Addresser is implemented by pools that know the address of their node.
// Error messages and CheckTimes reports use it; without it a node is named
// by its index.
type Addresser interface {
	Addr() string
}

// NewPool returns a redigo pool for one node given as a URL:
// redis://[[user]:password@]host[:port][/db] or rediss:// for TLS; a bare
// host:port means redis://host:port. The URL is checked at once;
// connections are dialled lazily. opts are passed to every dial, after the
// options taken from the URL.
//
// A factory's pipelined connection to a redis:// node of such a pool is
// dialled by the factory itself, with the same URL and options but
// outside the pool, on a socket that it writes each batch of commands to
// in one system call (a batch of a thousand extensions through redigo's
// 4 KB buffer took twenty). DialConnectTimeout and DialKeepAlive in opts
// do not apply to that dial, which the node timeout bounds; a dialler of
// the caller's in opts (DialNetDial, DialContextFunc) makes it a redigo
// connection like the pool's.
func NewPool(rawURL string, opts ...redis.DialOption) (*redis.Pool, error) {
	rawURL, err := nodeURL(rawURL)
	if err != nil {
		return nil, err
	}
	addr, err := parseNodeURL(rawURL)
	if err != nil {
		return nil, err
	}
	dialOpts := append([]redis.DialOption{redis.DialConnectTimeout(pipeline.ConnectTimeout)}, opts...)
	p := &redis.Pool{
		MaxIdle:     32,
		IdleTimeout: 4 * time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialURLContext(ctx, rawURL, dialOpts...)
		},
	}
	pipeline.RememberPool(p, pipeline.PoolFacts{Addr: addr, Dial: pipeline.SocketDialer(rawURL, opts)})
	return p, nil
}

// pipelineDial is how the pipelined transport reaches p's node: on a
// socket of its own for a pool made by NewPool (pipeline.SocketDialer),
// else with a connection borrowed from p for as long as it works.
func pipelineDial(p Pool) func(context.Context) (redis.Conn, error) {
	if rp, ok := p.(*redis.Pool); ok {
		if dial := pipeline.FactsOf(rp).Dial; dial != nil {
			return dial
		}
	}
	return p.GetContext
}

// nodeURL is the URL of a node as NewPool and NewFactoryFromURLs take
// it: a URL with a scheme as it is, a bare [user:password@]host[:port][/db]
// (no "://") with redis:// in front. A bare address whose host part is
// not host or host:port is refused here, where "missing scheme" is the
// likely mistake.
func nodeURL(raw string) (string, error) {
	if strings.Contains(raw, "://") {
		return raw, nil
	}
	full := "redis://" + raw
	u, err := url.Parse(full)
	if err == nil && u.Host != "" && u.Opaque == "" && validHostPort(u.Host) {
		return full, nil
	}
	return "", invalidArg("node address %q is neither host:port nor a redis:// or rediss:// URL", raw)
}

// validHostPort reports whether h is a host, a host:port or a bracketed
// IPv6 address with or without a port.
func validHostPort(h string) bool {
	if !strings.Contains(h, ":") {
		return true
	}
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		return true
	}
	_, _, err := net.SplitHostPort(h)
	return err == nil
}

// parseNodeURL validates a node URL and returns its host:port.
func parseNodeURL(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", invalidArg("node URL %q: %v", rawURL, err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return "", invalidArg("node URL %q: scheme must be redis or rediss", rawURL)
	}
	if u.Host == "" || u.Opaque != "" {
		return "", invalidArg("node URL %q: no host", rawURL)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Host, "6379"
	}
	if host == "" {
		return "", invalidArg("node URL %q: no host", rawURL)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", invalidArg("node URL %q: port %q is not in 1-65535", rawURL, port)
	}
	if p := u.Path; p != "" && p != "/" {
		for _, c := range p[1:] {
			if c < '0' || c > '9' {
				return "", invalidArg("node URL %q: database must be a number", rawURL)
			}
		}
	}
	return net.JoinHostPort(host, port), nil
}

// nodeAddr names a pool's node for messages.
func nodeAddr(p Pool) string {
	if a, ok := p.(Addresser); ok {
		return a.Addr()
	}
	if rp, ok := p.(*redis.Pool); ok {
		if a := pipeline.FactsOf(rp).Addr; a != "" {
			return a // NewPool noted it
		}
	}
	return "unknown address"
}

// checkPools checks a pool list for nil and duplicate entries; the node
// count is checked by the option validation.
func checkPools(pools []Pool) error { return checkNodes(poolNodes(pools)) }

// poolsFromURLs checks a node URL list and makes one pool per URL. URLs
// that are equal, or name the same host, port and database, are refused.
func poolsFromURLs(urls []string) ([]Pool, []io.Closer, error) {
	if len(urls) < 3 {
		return nil, nil, &InsufficientNodesError{NodeCount: len(urls)}
	}
	pools := make([]Pool, len(urls))
	closers := make([]io.Closer, 0, len(urls))
	seen := map[string]int{}
	for i, u := range urls {
		addr, err := parseNodeURL(u)
		if err != nil {
			return nil, nil, err
		}
		where := addr + dbOf(u)
		if j, dup := seen[where]; dup {
			return nil, nil, invalidArg("node %d repeats the URL of node %d (%s)", i, j, addr)
		}
		seen[where] = i
		p, err := NewPool(u)
		if err != nil {
			return nil, nil, err
		}
		pools[i] = p
		closers = append(closers, p)
	}
	return pools, closers, nil
}

// dbOf returns a node URL's database path ("/0" when none), for telling
// duplicates apart.
func dbOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Path == "" || u.Path == "/" {
		return "/0"
	}
	return u.Path
}

// InitRedisNodes loads the lock scripts on every node, so that the first
// lock operations need no EVAL fallback. It is optional: scripts are sent
// with EVALSHA and fall back to EVAL on NOSCRIPT (after a node restart, for
// example). It returns the failures of all nodes that could not be reached.
func InitRedisNodes(ctx context.Context, nodes []Pool) error {
	if err := checkPools(nodes); err != nil {
		return err
	}
	var errs []error
	for i, p := range nodes {
		if err := loadScripts(ctx, p); err != nil {
			errs = append(errs, &NodeError{Node: i, Addr: nodeAddr(p), Err: err})
		}
	}
	return joinErrors(errs...)
}

// loadScripts loads every lock script on one node.
func loadScripts(ctx context.Context, p Pool) error {
	c, err := p.GetContext(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, src := range scriptSources() {
		if _, err := redis.DoContext(c, ctx, "SCRIPT", "LOAD", src); err != nil {
			return err
		}
	}
	return nil
}
