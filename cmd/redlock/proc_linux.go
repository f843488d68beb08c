package main

import "syscall"

// setParentDeathSignal makes the kernel send SIGTERM to the child if
// redlock dies (even of SIGKILL), since its lock then runs out.
func setParentDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGTERM }
