package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// DefaultWait is how long VerifyTestMain lets goroutines take to end once
// the tests have finished.
const DefaultWait = 2 * time.Second

// maxPause caps the pause between two looks at the running goroutines.
const maxPause = 100 * time.Millisecond

// Find waits up to wait for every goroutine to end except the caller's and
// those that the runtime, os/signal and the testing package keep, and
// returns an error listing the stacks of those still running then; nil if
// none is.
func Find(wait time.Duration) error {
	return poll(wait, running)
}

// poll calls leaked until it returns nothing or wait has passed, and
// reports what it returned last.
func poll(wait time.Duration, leaked func() []string) error {
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	for {
		found := leaked()
		if len(found) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("leakcheck: %d goroutines still running after %v:\n\n%s",
				len(found), wait, strings.Join(found, "\n\n"))
		}
		time.Sleep(pause)
		pause = min(2*pause, maxPause)
	}
}

// VerifyTestMain runs the tests and, if they passed, fails the binary when
// Find(DefaultWait) reports a goroutine. Then it calls cleanup, if not nil,
// and exits with the tests' code.
func VerifyTestMain(m *testing.M, cleanup func()) {
	code := m.Run()
	if code == 0 {
		if err := Find(DefaultWait); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if cleanup != nil {
		cleanup()
	}
	os.Exit(code)
}

// running returns the stacks of the goroutines that Find reports, leaving
// out the caller's, which runtime.Stack prints first.
func running() []string {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	stacks := strings.Split(strings.TrimSpace(string(buf)), "\n\n")
	var out []string
	for _, s := range stacks[1:] {
		if !expected(s) {
			out = append(out, s)
		}
	}
	return out
}

// expected tells whether a goroutine's stack is one that outlives every
// test by design.
func expected(stack string) bool {
	header, frames, _ := strings.Cut(stack, "\n")
	top := topFunction(frames)
	switch top {
	case "testing.RunTests", "testing.(*T).Run", "testing.(*T).Parallel",
		"testing.runFuzzing", "testing.runFuzzTests":
		// The testing package's own goroutines wait on a channel.
		return strings.Contains(header, "[chan receive")
	case "os/signal.signal_recv", "os/signal.loop":
		// Started by importing os/signal.
		return true
	case "runtime.goexit":
		// A cgo callback thread's goroutine.
		return strings.Contains(header, "[syscall")
	}
	// signal.Notify starts a runtime goroutine.
	return strings.Contains(frames, "runtime.ensureSigM(")
}

// topFunction returns the name of the innermost function of a stack's
// frames: the first line without its argument list.
func topFunction(frames string) string {
	line, _, _ := strings.Cut(frames, "\n")
	if i := strings.LastIndexByte(line, '('); i > 0 {
		return line[:i]
	}
	return line
}

// Snapshot is the set of goroutines running at one moment, by id.
type Snapshot map[string]bool

// Current returns the goroutines running now, except the caller's, so that
// a test can later look for the ones it started (FindNew).
func Current() Snapshot {
	s := Snapshot{}
	for _, stack := range running() {
		s[goroutineID(stack)] = true
	}
	return s
}

// FindNew is Find for the goroutines that were not running at before.
func FindNew(before Snapshot, wait time.Duration) error {
	return FindNewBut(before, wait, func(string) bool { return false })
}

// FindNewBut is FindNew for the goroutines whose stack exiting does not
// accept: those a caller knows to be on their way out.
func FindNewBut(before Snapshot, wait time.Duration, exiting func(stack string) bool) error {
	return poll(wait, func() []string {
		var found []string
		for _, stack := range running() {
			if !before[goroutineID(stack)] && !exiting(stack) {
				found = append(found, stack)
			}
		}
		return found
	})
}

// goroutineID reads the id from a stack's header, "goroutine 7 [running]:".
func goroutineID(stack string) string {
	header, _, _ := strings.Cut(stack, "\n")
	id, _, _ := strings.Cut(strings.TrimPrefix(header, "goroutine "), " ")
	return id
}
