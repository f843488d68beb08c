//go:build unix && !linux

package redlocktest

import "syscall"

// procAttr puts a node in its own process group, so that a signal sent to
// the test's group does not reach it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// processGone reports whether no process with this id exists.
func processGone(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }
