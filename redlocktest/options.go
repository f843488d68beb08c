package redlocktest

import (
	"os"
	"time"

	"github.com/redlockplus/redlock/internal/testkit/clockshim"
)

// Backend names a way of running the Redis nodes of a Cluster.
type Backend string

// The backends. Start picks one from the WithBackend option, else from the
// REDLOCKTEST_BACKEND environment variable, else BackendAuto.
const (
	// BackendAuto uses Docker when a Docker engine answers, else local
	// redis-server processes; when neither is available the test is skipped.
	BackendAuto Backend = "auto"
	// BackendDocker runs every node in its own container, on a network of
	// the cluster's own. The test fails when no Docker engine answers.
	BackendDocker Backend = "docker"
	// BackendProcess runs every node as a local redis-server process on a
	// loopback port. The test fails when redis-server is not installed.
	BackendProcess Backend = "process"
)

// Environment variables read by Start when the matching option is not given.
const (
	// EnvBackend selects the backend: "docker", "process" or "auto".
	EnvBackend = "REDLOCKTEST_BACKEND"
	// EnvImage names the Docker image of the nodes, such as "redis:7".
	EnvImage = "REDLOCKTEST_IMAGE"
	// EnvRedisServer names the redis-server binary of the process backend,
	// and the binary copied into a locally built image.
	EnvRedisServer = "REDLOCKTEST_REDIS_SERVER"
)

// Defaults of the options.
const (
	// DefaultImage is the Docker image the nodes run by default. When it is
	// neither present locally nor pullable, Start builds a small image from
	// the local redis-server binary instead (see WithImage).
	DefaultImage = "redis:7"
	// DefaultStartTimeout bounds how long a node may take to answer PING
	// after a start or restart: 30 s.
	DefaultStartTimeout = 30 * time.Second
)

// Option configures Start.
type Option func(*config)

type config struct {
	backend      Backend
	image        string
	persistence  bool
	serverArgs   []string
	startTimeout time.Duration
	redisServer  string
	// clockShim: some nodes run on the clock shim (WithClockShim);
	// clockNodes lists them, empty for all.
	clockShim  bool
	clockNodes []int
	// clocks is each node's clock, nil for a node on the real one; Start
	// fills it before the backend starts any node.
	clocks []*clockshim.Clock
}

func newConfig(opts []Option) config {
	c := config{
		backend:      Backend(os.Getenv(EnvBackend)),
		image:        os.Getenv(EnvImage),
		startTimeout: DefaultStartTimeout,
		redisServer:  os.Getenv(EnvRedisServer),
	}
	if c.backend == "" {
		c.backend = BackendAuto
	}
	if c.image == "" {
		c.image = DefaultImage
	}
	if c.redisServer == "" {
		c.redisServer = "redis-server"
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// WithBackend selects the backend. Default: the REDLOCKTEST_BACKEND
// environment variable, else BackendAuto.
func WithBackend(b Backend) Option { return func(c *config) { c.backend = b } }

// WithImage sets the Docker image of the nodes, as "repository:tag". Default:
// the REDLOCKTEST_IMAGE environment variable, else DefaultImage ("redis:7").
// An image missing locally is pulled; when the pull fails (no registry), a
// local image is built FROM scratch out of the machine's redis-server
// binary, its shared libraries and the dynamic loader, and used instead.
// Only the Docker backend uses it.
func WithImage(name string) Option { return func(c *config) { c.image = name } }

// WithPersistence turns on the append-only file with "appendfsync always",
// so that a node keeps its keys across Kill and Restart. Default false: a
// restarted node comes back empty, which is what Redlock's safety argument
// has to survive.
func WithPersistence(on bool) Option { return func(c *config) { c.persistence = on } }

// WithServerArgs appends arguments to every redis-server command line, such
// as "--maxmemory", "64mb". Default none.
func WithServerArgs(args ...string) Option {
	return func(c *config) { c.serverArgs = append(c.serverArgs, args...) }
}

// WithStartTimeout bounds how long a node may take to answer PING after a
// start or restart. Default DefaultStartTimeout (30 s).
func WithStartTimeout(d time.Duration) Option { return func(c *config) { c.startTimeout = d } }

// WithClockShim runs the listed nodes, or every node when none is listed,
// on a wall clock that the test steps while they run, with
// Cluster.SetClockOffset: a node's clock_gettime(CLOCK_REALTIME),
// gettimeofday and time add an offset read at every call from a file of
// the test's, through an LD_PRELOAD shim (internal/testkit/clockshim) built
// with gcc at the first Start that asks for it; the monotonic clocks are
// left alone, as a stepped system clock leaves them. The offset starts at
// 0 and survives Kill and Restart. Redis expires keys and answers TIME by
// the stepped clock, which is how a test steps a node's clock forward past
// a lock's TTL. The test fails when gcc is missing (apt-get install gcc),
// or when a listed index is not a node.
//
// On the Docker backend the shim and the offset file are bind-mounted into
// the node's container (at /clockshim), so the engine must run on this
// machine, and the image must use glibc: the image built from the local
// redis-server (see WithImage) and the Debian-based redis:7 do; an Alpine
// (musl) image does not load the shim. SetClockOffset checks that the node
// follows the clock it sets.
func WithClockShim(nodes ...int) Option {
	return func(c *config) {
		c.clockShim = true
		c.clockNodes = append(c.clockNodes, nodes...)
	}
}

// clockFor is node i's clock, nil when it runs on the real one.
func (c *config) clockFor(i int) *clockshim.Clock {
	if i < len(c.clocks) {
		return c.clocks[i]
	}
	return nil
}

// redisArgs returns the redis-server arguments that follow the port.
func (c *config) redisArgs() []string {
	args := []string{"--protected-mode", "no", "--loglevel", "warning", "--save", ""}
	if c.persistence {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	return append(args, c.serverArgs...)
}
