package redisproc

import "syscall"

// procAttr puts a node in its own process group, so that a signal sent to
// the test's group does not reach it, and has the kernel kill it when the
// test binary dies, so that a crashed test leaks no redis-server.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
