//go:build !unix

package main

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// child is not supported on this system.
type child struct{}

func startChild(argv []string, env []string, name string, grace time.Duration) (*child, error) {
	return nil, &exitError{code: exitUsage, err: errors.New("run is supported on Unix systems only")}
}

func (c *child) signal(sig syscall.Signal) {}
func (c *child) wait() int                 { return exitFailure }

func signalName(sig os.Signal) string { return sig.String() }

// asGuardian: there is no guardian on this system (guardian.go).
func asGuardian(args []string) (code int, ok bool) { return 0, false }
