package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockplus/redlock"
	"github.com/spf13/cobra"
)

// EnvNodes is the environment variable that lists the nodes when --nodes is
// not given.
const EnvNodes = "REDLOCK_NODES"

// pingTimeout bounds the reachability check of each node.
const pingTimeout = 2 * time.Second

// nodeFlags is the --nodes flag of the commands that talk to lock nodes.
type nodeFlags struct {
	list string
	cmd  *cobra.Command
}

func addNodeFlags(cmd *cobra.Command) *nodeFlags {
	nf := &nodeFlags{cmd: cmd}
	cmd.Flags().StringVar(&nf.list, "nodes", "",
		"comma-separated node URLs redis://[user:password@]host[:port][/db] (default $"+EnvNodes+")")
	return nf
}

// urls returns the configured node URLs and where they came from; none
// when neither --nodes nor REDLOCK_NODES is set.
func (nf *nodeFlags) urls() ([]string, string, error) {
	src, raw := "--nodes", nf.list
	if !nf.cmd.Flags().Changed("nodes") {
		src, raw = EnvNodes, os.Getenv(EnvNodes)
	}
	if strings.TrimSpace(raw) == "" {
		if src == "--nodes" {
			return nil, src, usageErr("--nodes is empty")
		}
		return nil, "", nil
	}
	urls, err := splitNodeList(raw)
	if err != nil {
		return nil, src, usageErr("%s: %v", src, err)
	}
	return urls, src, nil
}

// splitNodeList splits a comma list of node URLs; a bare host:port gets
// the redis:// scheme.
func splitNodeList(raw string) ([]string, error) {
	var urls []string
	for _, p := range strings.Split(raw, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("empty entry in %q", raw)
		}
		if !strings.Contains(p, "://") {
			p = "redis://" + p
		}
		urls = append(urls, p)
	}
	return urls, nil
}

// lockFlags are the lock options shared by run, status, demo and bench.
type lockFlags struct {
	ttl         time.Duration
	nodeTimeout time.Duration
	retryDelay  time.Duration
	quorum      int
	driftFactor float64
	cmd         *cobra.Command
}

func addLockFlags(cmd *cobra.Command, defaultTTL time.Duration) *lockFlags {
	lf := &lockFlags{cmd: cmd}
	f := cmd.Flags()
	f.DurationVar(&lf.ttl, "ttl", defaultTTL, "lock time to live on each node; extended while held")
	f.DurationVar(&lf.nodeTimeout, "timeout", 0, "per-node command timeout (default 1% of the TTL, within 100ms..1s)")
	f.DurationVar(&lf.retryDelay, "retry-delay", redlock.DefaultRetryDelay, "upper bound of the random pause between acquire attempts")
	f.IntVar(&lf.quorum, "quorum", 0, "nodes that must agree (default N/2+1)")
	f.Float64Var(&lf.driftFactor, "drift-factor", redlock.DefaultDriftFactor, "share of the TTL reserved for clock drift")
	return lf
}

// options maps the flags to library options; only flags given on the
// command line override the library's derived defaults.
func (lf *lockFlags) options() []redlock.Option {
	f := lf.cmd.Flags()
	opts := []redlock.Option{redlock.WithTTL(lf.ttl), redlock.WithRetryDelay(lf.retryDelay), redlock.WithDriftFactor(lf.driftFactor)}
	if f.Changed("timeout") {
		opts = append(opts, redlock.WithNodeTimeout(lf.nodeTimeout))
	}
	if f.Changed("quorum") {
		opts = append(opts, redlock.WithQuorum(lf.quorum))
	}
	return opts
}

// quorumFor is the quorum the factory uses for n nodes.
func (lf *lockFlags) quorumFor(n int) int {
	if lf.cmd.Flags().Changed("quorum") {
		return lf.quorum
	}
	return n/2 + 1
}

// cluster is a set of lock nodes with their factory.
type cluster struct {
	urls    []string
	addrs   []string
	pools   []*redis.Pool
	factory *redlock.Factory
}

// openCluster makes a factory for one-shot commands (status, bench, the
// demo's checks) over urls with opts, and one pool per URL for the
// reachability checks. It contacts no node. The node list is checked by
// the library itself (redlock.NewFactoryFromURLs): URL syntax, repeated
// URLs, at least 3 nodes, and the options. One-shot commands gain nothing
// from pipelining and hold no lock to watch, so their factory borrows a
// pool connection per command.
func openCluster(urls []string, opts ...redlock.Option) (*cluster, error) {
	return newCluster(urls, append([]redlock.Option{redlock.WithPipelining(false)}, opts...))
}

// openHoldingCluster is openCluster for the commands that hold a lock
// while a child runs (run, run --permits, elect): their factory keeps the
// library's defaults, pipelining and loss detection, so that a lock whose
// keys vanish from a quorum ends within a round trip and the child is
// stopped then, not at the next extension. A release decided at quorum
// leaves no delete queued at exit: the pipelined Factory.Close writes what
// was sent and waits for the replies, so the key is gone from every node,
// the slow ones included, before redlock exits
// (TestRunReleaseReachesSlowNode).
func openHoldingCluster(urls []string, opts ...redlock.Option) (*cluster, error) {
	return newCluster(urls, opts)
}

// newCluster is openCluster with the factory options as given.
func newCluster(urls []string, opts []redlock.Option) (*cluster, error) {
	f, err := redlock.NewFactoryFromURLs(urls, opts...)
	if err != nil {
		return nil, classify(err)
	}
	c := &cluster{urls: urls, factory: f}
	for _, u := range urls {
		p, err := redlock.NewPool(u)
		if err != nil {
			c.close()
			return nil, classify(err)
		}
		c.pools = append(c.pools, p)
		c.addrs = append(c.addrs, hostOf(u))
	}
	return c, nil
}

// hostOf is the host:port part of a node URL, for messages.
func hostOf(u string) string {
	rest := u[strings.Index(u, "://")+3:]
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = rest[at+1:]
	}
	if sl := strings.Index(rest, "/"); sl >= 0 {
		rest = rest[:sl]
	}
	return rest
}

// close releases the factory's locks and closes the pools.
func (c *cluster) close() {
	if c.factory != nil {
		_ = c.factory.Close()
	}
	for _, p := range c.pools {
		_ = p.Close()
	}
}

// ping checks every node in parallel and returns one error per node (nil
// for a node that answered).
func (c *cluster) ping(ctx context.Context) []error {
	errs := make([]error, len(c.pools))
	var wg sync.WaitGroup
	for i, p := range c.pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, pingTimeout)
			defer cancel()
			conn, err := p.GetContext(ctx)
			if err == nil {
				_, err = redis.DoContext(conn, ctx, "PING")
				conn.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	return errs
}

// requireQuorum pings the nodes and fails with exit 69 when fewer than
// quorum answer. It returns the nodes that did not answer when a quorum
// did, for a warning: "host:port (cause)".
func (c *cluster) requireQuorum(ctx context.Context, quorum int) ([]string, error) {
	var failed []string
	for i, err := range c.ping(ctx) {
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s (%s)", c.addrs[i], cause(err)))
		}
	}
	up := len(c.pools) - len(failed)
	if up < quorum {
		return nil, exitCode(exitUnavailable, fmt.Errorf("%d of %d nodes answered, %d needed: %s",
			up, len(c.pools), quorum, strings.Join(failed, ", ")))
	}
	return failed, nil
}

// notRedis returns the addresses of the nodes that answer INFO without a
// redis_version field: embedded servers such as miniredis (the nodes of
// 'redlock dev'), whose speed says nothing about Redis. A node that does
// not answer is not listed.
func (c *cluster) notRedis(ctx context.Context) []string {
	var out []string
	for i, p := range c.pools {
		ctx, cancel := context.WithTimeout(ctx, pingTimeout)
		conn, err := p.GetContext(ctx)
		if err != nil {
			cancel()
			continue
		}
		info, err := redis.String(redis.DoContext(conn, ctx, "INFO", "server"))
		conn.Close()
		cancel()
		var rerr redis.Error
		if (err == nil || errors.As(err, &rerr)) && !strings.Contains(info, "redis_version:") {
			out = append(out, c.addrs[i])
		}
	}
	return out
}
