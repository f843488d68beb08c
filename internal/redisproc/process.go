//go:build unix

package redisproc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultTimeout bounds a whole Start, retries included, when
// Config.Timeout is zero: 30 s, for a loaded machine.
const DefaultTimeout = 30 * time.Second

// maxPicks bounds how many free ports one Start tries: losing the race for
// a port is rare, losing it ten times in a row means something is wrong.
const maxPicks = 10

// ErrPortInUse means the port was taken by someone else: redis-server
// could not bind it, or another server answered on it.
var ErrPortInUse = errors.New("redisproc: port in use")

// Config says how to start a redis-server.
type Config struct {
	// Binary is the redis-server executable. Default "redis-server".
	Binary string
	// Dir is the process's working and data directory (--dir). Required.
	Dir string
	// Port is the loopback port to listen on. 0, the default, picks a free
	// port and another when it turns out to be taken. A fixed port (a node
	// restarted where its clients expect it) is retried until Timeout.
	Port int
	// ConfigFile, when set, is the first argument: redis-server in
	// sentinel mode needs a configuration file it can rewrite.
	ConfigFile string
	// Args follow the ones Start always gives: --port, --bind 127.0.0.1,
	// --daemonize no and --dir.
	Args []string
	// Timeout bounds the whole Start. Default DefaultTimeout.
	Timeout time.Duration
	// Env is added to the process's environment (an LD_PRELOAD clock shim,
	// for example).
	Env []string
}

// Process is a redis-server started by Start.
type Process struct {
	// Port is the loopback port it listens on.
	Port int
	// Pid is its process id, which it reported on Port before Start
	// returned.
	Pid int
	// RunID is the random id it reported, new at every start.
	RunID string

	cmd    *exec.Cmd
	exited chan struct{}
	log    *tailBuffer
}

// Start launches a redis-server and returns once the server answering on
// its port is that process and accepts commands. On a collision it kills
// its child and starts again, on a new port unless cfg.Port is fixed.
func Start(cfg Config) (*Process, error) {
	if cfg.Dir == "" {
		return nil, errors.New("redisproc: Config.Dir is required")
	}
	if cfg.Binary == "" {
		cfg.Binary = "redis-server"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	deadline := time.Now().Add(cfg.Timeout)
	for pick := 1; ; pick++ {
		port := cfg.Port
		if port == 0 {
			var err error
			if port, err = pickPort(); err != nil {
				return nil, err
			}
		}
		p, err := launch(cfg, port, deadline)
		if err == nil || !errors.Is(err, ErrPortInUse) || !time.Now().Before(deadline) {
			return p, err
		}
		if cfg.Port == 0 && pick == maxPicks {
			return nil, fmt.Errorf("redisproc: %d free ports were all taken before redis-server bound them; the last: %w", maxPicks, err)
		}
		if cfg.Port != 0 {
			time.Sleep(50 * time.Millisecond) // wait for whoever holds the fixed port
		}
	}
}

// launch runs one redis-server on port and waits until it is ready.
func launch(cfg Config, port int, deadline time.Time) (*Process, error) {
	var args []string
	if cfg.ConfigFile != "" {
		args = append(args, cfg.ConfigFile)
	}
	args = append(args, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--daemonize", "no", "--dir", cfg.Dir)
	cmd := exec.Command(cfg.Binary, append(args, cfg.Args...)...)
	cmd.Dir = cfg.Dir
	if len(cfg.Env) > 0 {
		cmd.Env = append(os.Environ(), cfg.Env...)
	}
	cmd.SysProcAttr = procAttr()
	log := &tailBuffer{max: 8192}
	cmd.Stdout, cmd.Stderr = log, log
	// A fork of the server (a snapshot for a replica, an AOF rewrite)
	// inherits its output; a killed server must not wait on it.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("redisproc: start %s: %w", cfg.Binary, err)
	}
	p := &Process{Port: port, Pid: cmd.Process.Pid, cmd: cmd, exited: make(chan struct{}), log: log}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	if err := p.waitReady(deadline); err != nil {
		p.Kill()
		return nil, fmt.Errorf("%w; its output:\n%s", err, log.String())
	}
	return p, nil
}

// waitReady waits until the server answering on p's port is p and accepts
// commands. Another server answering, or p failing to bind, is a
// collision (ErrPortInUse): a ready check that only asked for PONG would
// take someone else's server for ours.
func (p *Process) waitReady(deadline time.Time) error {
	addr := p.Addr()
	for {
		select {
		case <-p.exited:
			if strings.Contains(p.log.String(), "Address already in use") {
				return fmt.Errorf("%w: redis-server could not bind %s", ErrPortInUse, addr)
			}
			return fmt.Errorf("redisproc: redis-server for %s exited before it was ready", addr)
		default:
		}
		id, ready, err := probe(addr)
		switch {
		case err == nil && id.pid != p.Pid:
			return fmt.Errorf("%w: %s is answered by process %d, not by ours (%d)", ErrPortInUse, addr, id.pid, p.Pid)
		case err == nil && ready:
			p.RunID = id.runID
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("redisproc: redis-server on %s not ready in time (last: %v)", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Addr returns the process's loopback host:port.
func (p *Process) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port)) }

// Exited is closed once the process has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Output returns the end of what the process wrote (its log).
func (p *Process) Output() string { return p.log.String() }

// Signal sends sig to the process; it fails once the process has exited.
func (p *Process) Signal(sig os.Signal) error {
	select {
	case <-p.exited:
		return errors.New("redisproc: the process is not running")
	default:
	}
	return p.cmd.Process.Signal(sig)
}

// Kill stops the process at once with SIGKILL, continuing it first in case
// it is paused, and waits until it has exited. Data it did not persist is
// lost. It may be called more than once, from any goroutine.
func (p *Process) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Kill()
	<-p.exited
}
