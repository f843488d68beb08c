// Package clockshim steps the wall clock of a redis-server process for the
// node guard's tests: an LD_PRELOAD shim (shim.c.txt, C: a .c file would make go build want cgo), built with gcc, adds an
// offset read from a memory-mapped file to CLOCK_REALTIME, gettimeofday
// and time, so the offset can change while the server runs. libfaketime
// from Debian cannot be used: it aborts Debian's redis-server 7.0 at start.
package clockshim

import (
	_ "embed"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

//go:embed shim.c.txt
var source []byte

// EnvFile names the offset file in the process's environment.
const EnvFile = "CLOCKSHIM_FILE"

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// Library builds the shim once per test binary and returns the path of
// the shared object. The test fails when gcc is missing or fails.
func Library(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "clockshim")
		if err != nil {
			buildErr = err
			return
		}
		src, lib := filepath.Join(dir, "shim.c"), filepath.Join(dir, "clockshim.so")
		if err := os.WriteFile(src, source, 0o644); err != nil {
			buildErr = err
			return
		}
		out, err := exec.Command("gcc", "-O2", "-shared", "-fPIC", "-o", lib, src).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("gcc: %v: %s", err, out)
			return
		}
		built = lib
	})
	if buildErr != nil {
		tb.Fatalf("clockshim: %v (install gcc: apt-get install -y gcc)", buildErr)
	}
	return built
}

// Clock is the offset file of one process's clock.
type Clock struct {
	path string
	lib  string
}

// New returns a clock at offset 0, with its file in a directory of tb's.
func New(tb testing.TB) *Clock {
	tb.Helper()
	c := &Clock{path: filepath.Join(tb.TempDir(), "offset"), lib: Library(tb)}
	if err := os.WriteFile(c.path, make([]byte, 8), 0o644); err != nil {
		tb.Fatal(err)
	}
	return c
}

// Env is what the process's environment needs to run on the clock.
func (c *Clock) Env() []string {
	return []string{"LD_PRELOAD=" + c.lib, EnvFile + "=" + c.path}
}

// Lib and File are the shim and the offset file, to mount in a container.
func (c *Clock) Lib() string  { return c.lib }
func (c *Clock) File() string { return c.path }

// Set moves the process's wall clock to the real one plus d, at once.
func (c *Clock) Set(tb testing.TB, d time.Duration) {
	tb.Helper()
	f, err := os.OpenFile(c.path, os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], uint64(d.Microseconds()))
	if _, err := f.WriteAt(b[:], 0); err != nil {
		tb.Fatal(err)
	}
}
