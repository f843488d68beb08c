//go:build unix

package redisproc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// given holds every port pickPort handed out in this process, with the
// file that reserves it from other processes (nil where none could be
// made). A port is never handed out twice, so that a node that is killed
// and waits on its port to be restarted cannot lose it to another test,
// and so that the clients of a killed node (a replica, a sentinel, a
// store that dials the address it was given) can never reach another
// test's server in its place.
var given = struct {
	sync.Mutex
	ports map[int]*os.File
}{ports: map[int]*os.File{}}

// pickPort is how Start picks a port; tests replace it to force a
// collision.
var pickPort = freePort

// freePort asks the kernel for a free loopback port that no test process
// on this machine has been handed out before. The port is free only at
// this instant: Start handles losing it before redis-server binds it.
func freePort() (int, error) {
	given.Lock()
	defer given.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redisproc: find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if _, taken := given.ports[port]; taken {
			continue
		}
		f, ok := reserve(port)
		if !ok {
			continue
		}
		given.ports[port] = f
		return port, nil
	}
	return 0, fmt.Errorf("redisproc: the kernel kept offering ports already handed out")
}

// reservations is the directory of the files by which test processes
// reserve their ports from one another.
var reservations = filepath.Join(os.TempDir(), "redisproc-ports")

// reserve takes port for this process until it exits: it holds an
// exclusive lock on the port's file in reservations, which the kernel
// drops when the process ends, however it ends. The kernel hands a port
// that a killed node freed to the next bind that asks for any port, often
// within seconds, so parallel test binaries (go test ./... runs packages
// at once) would otherwise reuse each other's ports. ok is false when
// another process holds the port; when no file can be made, the port is
// this process's alone to judge (f is nil).
func reserve(port int) (f *os.File, ok bool) {
	if err := os.MkdirAll(reservations, 0o777); err != nil {
		return nil, true
	}
	f, err := os.OpenFile(filepath.Join(reservations, strconv.Itoa(port)), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, !errors.Is(err, syscall.EWOULDBLOCK)
	}
	return f, true
}
