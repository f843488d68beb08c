//go:build unix && !linux

package redisproc

import "syscall"

// procAttr puts a node in its own process group, so that a signal sent to
// the test's group does not reach it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
