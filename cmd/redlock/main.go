package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/sdlstore"
)

// Exit codes of redlock. A command run by `redlock run` has its own exit
// code passed through instead, except for the cases listed here.
const (
	exitOK          = 0
	exitFailure     = 1   // any other failure (e.g. sdl get of a missing key)
	exitNotHeld     = 3   // status: the lock is free (as systemctl is-active for an inactive unit)
	exitUnfit       = 4   // doctor: a node is not fit to vote for a safe lock
	exitUsage       = 64  // bad command line or configuration (sysexits EX_USAGE)
	exitUnavailable = 69  // nodes unreachable or failing (EX_UNAVAILABLE)
	exitNotAcquired = 75  // run: lock not acquired in time (EX_TEMPFAIL)
	exitLockLost    = 76  // run: lock lost while the command ran; it was stopped
	exitCannotExec  = 126 // run: the command exists but cannot be executed
	exitNotFound    = 127 // run: the command was not found
	exitSignalBase  = 128 // run: 128+n when the command died of signal n
	exitInternal    = 70  // a bug in redlock (EX_SOFTWARE)
)

// exitError is an error with the exit code it ends the program with.
type exitError struct {
	code int
	err  error
	hint string // appended after the message, e.g. "see 'redlock run --help'"
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr is a command-line or configuration error (exit 64).
func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// exitCode wraps err with an exit code; nil stays nil.
func exitCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// silentExit ends the program with code and prints nothing (the command's
// own exit code, passed through by run).
type silentExit struct{ code int }

func (e silentExit) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// classify turns an error from a library call into an exitError: bad input
// is a usage error, anything else a node or Redis failure.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	if errors.Is(err, redlock.ErrInvalidArgument) || errors.Is(err, sdlstore.ErrInvalidArgument) {
		return exitCode(exitUsage, err)
	}
	return exitCode(exitUnavailable, err)
}

func main() {
	if code, ok := asGuardian(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

// runMain runs the command line and returns the exit code. Errors are
// printed to stderr as one line.
func runMain(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintln(stderr, errorLine(fmt.Errorf("internal error: %v", p), "please report it"))
			code = exitInternal
		}
	}()
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var se silentExit
	if errors.As(err, &se) {
		return se.code
	}
	code, hint := exitUsage, "" // errors not made here are cobra's parse errors
	var ee *exitError
	if errors.As(err, &ee) {
		code, hint = ee.code, ee.hint
	}
	fmt.Fprintln(stderr, errorLine(err, hint))
	return code
}

// errorLine formats err as one line prefixed with "redlock: ".
func errorLine(err error, hint string) string {
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
	msg = strings.ReplaceAll(msg, "; ;", ";")
	if !strings.HasPrefix(msg, "redlock: ") {
		msg = "redlock: " + msg
	}
	// The library's messages carry their own "redlock: " prefix; drop the
	// repeats inside a wrapped message.
	msg = "redlock: " + strings.ReplaceAll(strings.TrimPrefix(msg, "redlock: "), "redlock: ", "")
	if hint != "" {
		msg += " (" + hint + ")"
	}
	return msg
}

// cause is the part of a node's error that is news in a line that already
// names the node: "connect: connection refused" rather than "node 2
// (127.0.0.1:7382): dial tcp 127.0.0.1:7382: connect: connection refused".
func cause(err error) string {
	var ne *redlock.NodeError
	if errors.As(err, &ne) && ne.Err != nil {
		err = ne.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		err = oe.Err
	}
	return strings.TrimPrefix(errorLine(err, ""), "redlock: ")
}
