//go:build unix

package redlocktest

import (
	"fmt"
	"os"
	"syscall"

	"github.com/redlockplus/redlock/internal/redisproc"
)

// processBackend runs each node as a local redis-server process, started
// by internal/redisproc (the starter all of the repository's tests share)
// on a free loopback port, with a data directory of its own kept across
// restarts so that WithPersistence works.
type processBackend struct {
	binary string
	cfg    config
	root   string // data directories live below it
	nodes  []*procNode
}

type procNode struct {
	dir  string
	proc *redisproc.Process // the last one started; it may have exited
}

func newProcessBackend(cfg config, root string) (backend, error) {
	bin, err := lookRedisServer(cfg.redisServer)
	if err != nil {
		return nil, err
	}
	return &processBackend{binary: bin, cfg: cfg, root: root}, nil
}

func (b *processBackend) name() string { return string(BackendProcess) }

func (b *processBackend) add(i int) (string, error) {
	dir := fmt.Sprintf("%s/node%d", b.root, i)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("data directory: %w", err)
	}
	b.nodes = append(b.nodes, &procNode{dir: dir})
	return b.start(i)
}

// start launches node i's process on a new free port: clients reach it
// through its proxy, so its own address may change at every start.
func (b *processBackend) start(i int) (string, error) {
	n := b.nodes[i]
	pc := redisproc.Config{
		Binary:  b.binary,
		Dir:     n.dir,
		Args:    b.cfg.redisArgs(),
		Timeout: b.cfg.startTimeout,
	}
	if clock := b.cfg.clockFor(i); clock != nil {
		pc.Env = clock.Env()
	}
	p, err := redisproc.Start(pc)
	if err != nil {
		return "", err
	}
	n.proc = p
	return p.Addr(), nil
}

// stop kills node i's process (continuing it first if paused) and waits
// for it to exit.
func (b *processBackend) stop(i int) {
	if p := b.nodes[i].proc; p != nil {
		p.Kill() // a no-op once it has exited
	}
}

func (b *processBackend) kill(i int) error {
	b.stop(i)
	return nil
}

func (b *processBackend) restart(i int) (string, error) {
	b.stop(i)
	return b.start(i)
}

func (b *processBackend) signal(i int, sig syscall.Signal) error {
	if err := b.nodes[i].proc.Signal(sig); err != nil { // fails once it has exited
		return fmt.Errorf("send %v: %w", sig, err)
	}
	return nil
}

func (b *processBackend) pause(i int) error   { return b.signal(i, syscall.SIGSTOP) }
func (b *processBackend) unpause(i int) error { return b.signal(i, syscall.SIGCONT) }

func (b *processBackend) close() error {
	for i := range b.nodes {
		b.stop(i)
	}
	return nil
}
