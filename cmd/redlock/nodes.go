package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// EnvCluster is the environment variable that lists the seeds of a Redis
// Cluster when neither --nodes nor --cluster is given.
const EnvCluster = "REDLOCK_CLUSTER"

// pingTimeout bounds the reachability check of each node.
const pingTimeout = 2 * time.Second

// nodeFlags are the --nodes and --cluster flags of the commands that talk
// to lock nodes.
type nodeFlags struct {
	list    string
	seeds   string
	cluster bool // the command has --cluster
	cmd     *cobra.Command
}

// addNodeFlags adds --nodes and --cluster to cmd.
func addNodeFlags(cmd *cobra.Command) *nodeFlags {
	nf := addIndependentNodeFlags(cmd)
	nf.cluster = true
	cmd.Flags().StringVar(&nf.seeds, "cluster", "",
		"comma-separated seed URLs of a Redis Cluster whose masters are the nodes, in place of --nodes (default $"+EnvCluster+")")
	return nf
}

// addIndependentNodeFlags adds --nodes alone, for the commands that need
// a URL per node (demo, bench).
func addIndependentNodeFlags(cmd *cobra.Command) *nodeFlags {
	nf := &nodeFlags{cmd: cmd}
	cmd.Flags().StringVar(&nf.list, "nodes", "",
		"comma-separated node URLs redis://[user:password@]host[:port][/db] (default $"+EnvNodes+")")
	return nf
}

// nodeList is the configured lock nodes: the URLs of independent nodes,
// or the seeds of a Redis Cluster whose masters are the nodes.
type nodeList struct {
	urls  []string // --nodes or REDLOCK_NODES
	seeds []string // --cluster or REDLOCK_CLUSTER
	src   string   // the flag or variable they came from
}

// none reports whether no nodes are configured.
func (l nodeList) none() bool { return l.urls == nil && l.seeds == nil }

// nodes returns the configured nodes: the flag given, else the variable
// set; none when nothing is set. --nodes and --cluster together, or both
// variables set (without either flag), are a usage error.
func (nf *nodeFlags) nodes() (nodeList, error) {
	f := nf.cmd.Flags()
	switch {
	case f.Changed("nodes") && f.Changed("cluster"):
		return nodeList{}, usageErr("--nodes and --cluster cannot be used together: give independent nodes with --nodes, or the seeds of one Redis Cluster with --cluster")
	case f.Changed("nodes"):
		return nf.parse("--nodes", nf.list, false)
	case f.Changed("cluster"):
		return nf.parse("--cluster", nf.seeds, true)
	}
	nodes, seeds := os.Getenv(EnvNodes), os.Getenv(EnvCluster)
	switch {
	case strings.TrimSpace(seeds) == "":
		return nf.parse(EnvNodes, nodes, false)
	case !nf.cluster:
		if strings.TrimSpace(nodes) != "" {
			return nf.parse(EnvNodes, nodes, false)
		}
		return nodeList{}, usageErr("%s runs on independent nodes, not a Redis Cluster (%s is set): give --nodes or set %s", commandName(nf.cmd), EnvCluster, EnvNodes)
	case strings.TrimSpace(nodes) != "":
		return nodeList{}, usageErr("both %s and %s are set: unset one, or choose with --nodes or --cluster", EnvNodes, EnvCluster)
	}
	return nf.parse(EnvCluster, seeds, true)
}

// parse splits raw, the value of src; an empty flag is an error, an empty
// variable means no nodes.
func (nf *nodeFlags) parse(src, raw string, cluster bool) (nodeList, error) {
	if strings.TrimSpace(raw) == "" {
		if strings.HasPrefix(src, "--") {
			return nodeList{}, usageErr("%s is empty", src)
		}
		return nodeList{}, nil
	}
	urls, err := splitNodeList(raw)
	if err != nil {
		return nodeList{}, usageErr("%s: %v", src, err)
	}
	if cluster {
		return nodeList{seeds: urls, src: src}, nil
	}
	return nodeList{urls: urls, src: src}, nil
}

// urls returns the configured URLs of independent nodes and where they
// came from; none when neither --nodes nor REDLOCK_NODES is set. It is
// for the commands without --cluster.
func (nf *nodeFlags) urls() ([]string, string, error) {
	l, err := nf.nodes()
	return l.urls, l.src, err
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

// cluster is a set of lock nodes with their factory: independent nodes,
// with one pool each for the reachability checks, or the masters of a
// Redis Cluster.
type cluster struct {
	urls  []string // of the independent nodes; nil on a Redis Cluster
	addrs []string // host:port of each independent node
	pools []*redis.Pool
	// masters are the nodes of a Redis Cluster (redlock.ClusterNodes),
	// one per master; nil for independent nodes.
	masters []redlock.Node
	factory *redlock.Factory
}

// openCluster makes a factory for one-shot commands (status, bench, the
// demo's checks) over the nodes of l with opts, and one pool per URL for
// the reachability checks. Over independent nodes it contacts no node:
// the node list is checked by the library itself
// (redlock.NewFactoryFromURLs): URL syntax, repeated URLs, at least 3
// nodes, and the options. Over a Redis Cluster it reads the slot map from
// the seeds (redlock.ClusterNodes), within ctx. One-shot commands gain
// nothing from pipelining and hold no lock to watch, so their factory
// borrows a pool connection per command.
func openCluster(ctx context.Context, l nodeList, opts ...redlock.Option) (*cluster, error) {
	return newCluster(ctx, l, append([]redlock.Option{redlock.WithPipelining(false)}, opts...))
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
func openHoldingCluster(ctx context.Context, l nodeList, opts ...redlock.Option) (*cluster, error) {
	return newCluster(ctx, l, opts)
}

// newCluster is openCluster with the factory options as given. It is
// where every command's factory over the configured nodes is made.
func newCluster(ctx context.Context, l nodeList, opts []redlock.Option) (*cluster, error) {
	if l.seeds != nil {
		return newRedisCluster(ctx, l, opts)
	}
	urls := l.urls
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

// newRedisCluster makes the factory over the masters of the Redis
// Cluster that l's seeds reach: one node per master, each keeping a
// lock's key under its master's hash tag ("{7}NAME").
func newRedisCluster(ctx context.Context, l nodeList, opts []redlock.Option) (*cluster, error) {
	for _, s := range l.seeds { // the URL syntax, before any dial
		p, err := redlock.NewPool(s)
		if err != nil {
			return nil, clusterError(l, err)
		}
		_ = p.Close()
	}
	ctx, cancel := context.WithTimeout(ctx, 2*pingTimeout)
	defer cancel()
	nodes, err := redlock.ClusterNodes(ctx, l.seeds)
	if err != nil {
		return nil, clusterError(l, err)
	}
	c := &cluster{masters: nodes}
	if c.factory, err = redlock.NewFactoryFromNodes(nodes, opts...); err != nil {
		c.close()
		return nil, classify(err)
	}
	return c, nil
}

// clusterError explains why the seeds of l gave no cluster nodes: a seed
// that is a standalone server, too few masters, a bad URL (exit 64), or
// no seed reachable (exit 69).
func clusterError(l nodeList, err error) error {
	var few *redlock.InsufficientNodesError
	switch {
	case errors.As(err, &few):
		masters := fmt.Sprintf("%d masters", few.NodeCount)
		if few.NodeCount == 1 {
			masters = "1 master"
		}
		return usageErr("%s: the Redis Cluster has %s, and a lock needs at least 3", l.src, masters)
	case strings.Contains(err.Error(), "cluster support disabled"):
		what := "the seeds are standalone Redis servers, not members"
		if addrs := standaloneSeeds(err); len(addrs) == 1 {
			what = addrs[0] + " is a standalone Redis server, not a member"
		} else if len(addrs) > 1 {
			what = strings.Join(addrs, ", ") + " are standalone Redis servers, not members"
		}
		return usageErr("%s: %s of a Redis Cluster (cluster support disabled): give independent nodes with --nodes or %s", l.src, what, EnvNodes)
	case errors.Is(err, redlock.ErrInvalidArgument):
		return exitCode(exitUsage, fmt.Errorf("%s: %w", l.src, err))
	}
	return exitCode(exitUnavailable, fmt.Errorf("%s: %w", l.src, err))
}

// standaloneSeeds returns the addresses of the seeds that answered CLUSTER
// SLOTS with "cluster support disabled", from the library's error: one
// "host:port: error" per seed it asked.
func standaloneSeeds(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		u := errors.Unwrap(e)
		if u == nil {
			return
		}
		addr, ok := strings.CutSuffix(e.Error(), ": "+u.Error())
		if ok && addr != "" && !strings.Contains(addr, " ") && strings.Contains(u.Error(), "cluster support disabled") {
			out = append(out, addr)
			return
		}
		walk(u)
	}
	walk(err)
	return out
}

// size is the number of nodes.
func (c *cluster) size() int {
	if c.masters != nil {
		return len(c.masters)
	}
	return len(c.pools)
}

// addr names node i, for messages: on a Redis Cluster its master now.
func (c *cluster) addr(i int) string {
	if c.masters != nil {
		return c.masters[i].Addr()
	}
	return c.addrs[i]
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

// close releases the factory's locks and closes the pools, those of a
// Redis Cluster's masters after the factory.
func (c *cluster) close() {
	if c.factory != nil {
		_ = c.factory.Close()
	}
	for _, p := range c.pools {
		_ = p.Close()
	}
	if len(c.masters) > 0 {
		if cl, ok := c.masters[0].(io.Closer); ok {
			_ = cl.Close() // the pools every master's node shares
		}
	}
}

// ping checks every node in parallel and returns one error per node (nil
// for a node that answered).
func (c *cluster) ping(ctx context.Context) []error {
	if c.masters != nil {
		return c.pingMasters(ctx)
	}
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

// pingMasters is ping on the masters of a Redis Cluster, through their
// nodes: each PING goes to the node's master of the moment.
func (c *cluster) pingMasters(ctx context.Context) []error {
	errs := make([]error, len(c.masters))
	var wg sync.WaitGroup
	for i, n := range c.masters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, pingTimeout)
			defer cancel()
			_, errs[i] = n.Do(ctx, "PING")
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
			failed = append(failed, fmt.Sprintf("%s (%s)", c.addr(i), cause(err)))
		}
	}
	up := c.size() - len(failed)
	if up < quorum {
		return nil, exitCode(exitUnavailable, fmt.Errorf("%d of %d nodes answered, %d needed: %s",
			up, c.size(), quorum, strings.Join(failed, ", ")))
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
