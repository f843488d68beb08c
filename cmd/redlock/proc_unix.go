//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// child is the command run under the lock. It runs in its own process
// group, so that forwarded signals and the SIGTERM/SIGKILL of a lost lock
// reach everything it started, not only its first process.
//
// When redlock runs in the foreground of a terminal, the child's group is
// made the terminal's foreground group (as a shell does), so that it can
// read the terminal and gets Ctrl-C directly; redlock takes the terminal
// back when the child exits. A child stopped by Ctrl-Z is resumed at once:
// the lock keeps running out while a command is suspended.
//
// A guardian process (guardian.go) stops the group should redlock die
// while the command runs.
type child struct {
	cmd        *exec.Cmd
	pgid       int
	foreground bool
	ttyFd      int
	guardian   *guardian
}

// startChild starts argv with redlock's stdin, stdout and stderr and the
// extra environment env, under lock name, with its guardian, which gives
// it grace between SIGTERM and SIGKILL should redlock die.
func startChild(argv []string, env []string, name string, grace time.Duration) (*child, error) {
	g, err := startGuardian(name, grace)
	if err != nil {
		return nil, &exitError{code: exitInternal, err: err}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), env...)
	c := &child{cmd: cmd, ttyFd: int(os.Stdin.Fd()), guardian: g}
	attr := &syscall.SysProcAttr{Setpgid: true}
	if fg, err := unix.IoctlGetInt(c.ttyFd, unix.TIOCGPGRP); err == nil && fg == syscall.Getpgrp() {
		attr.Foreground, attr.Ctty = true, c.ttyFd
		c.foreground = true
	}
	setParentDeathSignal(attr)
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		g.standDown()
		return nil, startError(argv[0], err)
	}
	c.pgid = cmd.Process.Pid
	g.watch(c.pgid)
	if c.foreground {
		// Taking the terminal back later is a write from a background
		// group; SIGTTOU would stop redlock then. It is ignored only now,
		// after the start, so that the child does not inherit it.
		signal.Ignore(syscall.SIGTTOU)
	}
	return c, nil
}

// startError classifies a failed start: 127 for a command that is not
// found, 126 for one that cannot be executed.
func startError(name string, err error) error {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return &exitError{code: exitNotFound, err: err}
	}
	return &exitError{code: exitCannotExec, err: err}
}

// signal sends sig to the child's process group.
func (c *child) signal(sig syscall.Signal) {
	_ = syscall.Kill(-c.pgid, sig)
}

// wait waits for the child to exit and returns its exit code, 128+n when
// signal n killed it. It resumes a child stopped from the terminal, and
// stands the guardian down once the child has exited.
func (c *child) wait() int {
	defer c.guardian.standDown()
	defer c.restoreTerminal()
	defer c.cmd.Process.Release()
	pid := c.cmd.Process.Pid
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		switch {
		case err != nil:
			return exitFailure
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			return exitSignalBase + int(ws.Signal())
		case ws.Stopped() && c.foreground && ws.StopSignal() == syscall.SIGTSTP:
			// Suspended, the command would keep the lock (redlock goes on
			// extending it) while doing nothing, with the terminal stuck.
			fmt.Fprintln(os.Stderr, "\nredlock: a command that holds a lock cannot be suspended; resuming it")
			c.signal(syscall.SIGCONT)
		}
	}
}

// restoreTerminal makes redlock's group the terminal's foreground group
// again.
func (c *child) restoreTerminal() {
	if !c.foreground {
		return
	}
	_ = unix.IoctlSetPointerInt(c.ttyFd, unix.TIOCSPGRP, syscall.Getpgrp())
	signal.Reset(syscall.SIGTTOU)
}

// signalName names a signal the way users write it ("SIGTERM").
func signalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok {
		if n := unix.SignalName(s); n != "" {
			return n
		}
	}
	return sig.String()
}
