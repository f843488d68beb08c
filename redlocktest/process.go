//go:build unix

package redlocktest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// processBackend runs each node as a local redis-server process on a fixed
// loopback port and a data directory of its own, kept across restarts so
// that WithPersistence works.
type processBackend struct {
	binary string
	cfg    config
	root   string // data directories live below it
	nodes  []*procNode
}

type procNode struct {
	port   int
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
	log    *tailBuffer
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
	port, err := freePort()
	if err != nil {
		return "", err
	}
	dir := fmt.Sprintf("%s/node%d", b.root, i)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("data directory: %w", err)
	}
	n := &procNode{port: port, dir: dir}
	b.nodes = append(b.nodes, n)
	return b.start(i)
}

func (b *processBackend) addr(i int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.nodes[i].port))
}

// start launches node i's process and waits until it answers PING.
func (b *processBackend) start(i int) (string, error) {
	n := b.nodes[i]
	args := append([]string{"--port", strconv.Itoa(n.port), "--bind", "127.0.0.1",
		"--daemonize", "no", "--dir", n.dir}, b.cfg.redisArgs()...)
	cmd := exec.Command(b.binary, args...)
	cmd.Dir = n.dir
	cmd.SysProcAttr = procAttr()
	n.log = &tailBuffer{max: 4096}
	cmd.Stdout, cmd.Stderr = n.log, n.log
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %w", b.binary, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	n.cmd, n.exited = cmd, exited
	addr := b.addr(i)
	if err := waitPing(addr, b.cfg.startTimeout, exited); err != nil {
		b.stop(i)
		return "", fmt.Errorf("redis-server on %s not ready: %w; its output:\n%s", addr, err, n.log.String())
	}
	return addr, nil
}

// stop kills node i's process (continuing it first if paused) and waits
// for it to exit.
func (b *processBackend) stop(i int) {
	n := b.nodes[i]
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGCONT)
	_ = n.cmd.Process.Kill()
	<-n.exited
	n.cmd, n.exited = nil, nil
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
	n := b.nodes[i]
	if n.cmd == nil {
		return errors.New("process is not running")
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
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
