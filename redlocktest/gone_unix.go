//go:build unix

package redlocktest

import "syscall"

// processGone reports whether no process with this id exists.
func processGone(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }
