//go:build unix

package redisproc

import (
	"fmt"
	"net"
	"sync"
)

// given holds every port pickPort handed out in this process. A port is
// never handed out twice, so a node of one test that is killed and waits
// on its port to be restarted cannot lose it to another test of the same
// binary. Other processes are not covered: Start survives them instead.
var given = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// pickPort is how Start picks a port; tests replace it to force a
// collision.
var pickPort = freePort

// freePort asks the kernel for a free loopback port that this process has
// not handed out before. The port is free only at this instant: Start
// handles losing it before redis-server binds it.
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
		if !given.ports[port] {
			given.ports[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("redisproc: the kernel kept offering ports already handed out")
}
