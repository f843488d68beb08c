package sdlstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// errNoMaster is the cause of a failed master lookup: the sentinel did not
// name a master, or the server it named is not (yet) a master.
var errNoMaster = errors.New("sdlstore: sentinel master not found")

// sentinelTimeout bounds each exchange with the sentinel.
const sentinelTimeout = 2 * time.Second

// sentinelPool is a redlock.Pool for the master of one sentinel-managed
// Redis group. Every new connection asks the sentinel for the master's
// address (SENTINEL get-master-addr-by-name) and confirms it with ROLE;
// rediscover drops the pooled connections after a fault, so the next
// command finds the master again, after a failover too.
type sentinelPool struct {
	sentinelAddr string
	master       string
	dialOpts     []redis.DialOption

	mu     sync.Mutex
	pool   *redis.Pool
	addr   string // last confirmed master
	closed bool
}

func newSentinelPool(sentinelAddr, master string, dialOpts []redis.DialOption) *sentinelPool {
	p := &sentinelPool{sentinelAddr: sentinelAddr, master: master, dialOpts: dialOpts}
	p.pool = p.newRedisPool()
	return p
}

func (p *sentinelPool) newRedisPool() *redis.Pool {
	return &redis.Pool{MaxIdle: 32, IdleTimeout: 4 * time.Minute, DialContext: p.dialMaster}
}

// GetContext returns a connection to the current master.
func (p *sentinelPool) GetContext(ctx context.Context) (redis.Conn, error) {
	p.mu.Lock()
	pool, closed := p.pool, p.closed
	p.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	return pool.GetContext(ctx)
}

// Addr returns the master address last confirmed, or the sentinel's
// address before the first connection (redlock.Addresser).
func (p *sentinelPool) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.addr == "" {
		return "sentinel " + p.sentinelAddr + " master " + p.master
	}
	return p.addr
}

// rediscover replaces the pool, so that connections to a failed or demoted
// master are not reused and the next dial asks the sentinel again.
func (p *sentinelPool) rediscover() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	old := p.pool
	p.pool = p.newRedisPool()
	p.mu.Unlock()
	old.Close()
}

// Close closes the pool's connections.
func (p *sentinelPool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	return p.pool.Close()
}

// dialMaster connects to the master the sentinel names and checks its role.
func (p *sentinelPool) dialMaster(ctx context.Context) (redis.Conn, error) {
	addr, err := p.masterAddr(ctx)
	if err != nil {
		return nil, err
	}
	c, err := redis.DialContext(ctx, "tcp", addr, p.dialOpts...)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, sentinelTimeout)
	defer cancel()
	role, err := redis.Values(redis.DoContext(c, rctx, "ROLE"))
	if err == nil && len(role) == 0 {
		err = errUnexpectedReply
	}
	var r string
	if err == nil {
		r, err = redis.String(role[0], nil)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	if r != "master" {
		c.Close()
		return nil, fmt.Errorf("%w: %s named by sentinel %s for %q has role %s", errNoMaster, addr, p.sentinelAddr, p.master, r)
	}
	p.mu.Lock()
	p.addr = addr
	p.mu.Unlock()
	return c, nil
}

// masterAddr asks the sentinel for the master's address.
func (p *sentinelPool) masterAddr(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, sentinelTimeout)
	defer cancel()
	c, err := redis.DialContext(ctx, "tcp", p.sentinelAddr, redis.DialConnectTimeout(sentinelTimeout))
	if err != nil {
		return "", err
	}
	defer c.Close()
	hp, err := redis.Strings(redis.DoContext(c, ctx, "SENTINEL", "get-master-addr-by-name", p.master))
	if errors.Is(err, redis.ErrNil) || (err == nil && len(hp) != 2) {
		return "", fmt.Errorf("%w: sentinel %s does not know master %q", errNoMaster, p.sentinelAddr, p.master)
	}
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}
