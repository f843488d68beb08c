package redlocktest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// listenStable listens on a loopback port outside the kernel's range of
// ephemeral ports. A killed node's proxy stops listening and must take its
// port back on restart; a port inside that range could meanwhile become
// the local end of any outgoing connection of the machine (the failover
// suite saw "bind: address already in use" on restart), a port outside it
// only the explicit bind of another program.
func listenStable() (net.Listener, error) {
	lo, hi := ephemeralRange()
	for range 64 {
		port, ok := outside(lo, hi)
		if !ok {
			break
		}
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			return ln, nil
		}
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// outside picks a random port below the range [lo, hi] (above 10000, clear
// of well-known services), or above it when there is no room below.
func outside(lo, hi int) (int, bool) {
	const floor, span = 10000, 20000
	switch {
	case lo-floor >= 1000:
		from := max(floor, lo-span)
		return from + rand.IntN(lo-from), true
	case 65535-hi >= 1000:
		return hi + 1 + rand.IntN(65535-hi), true
	}
	return 0, false
}

// ephemeralRange is the kernel's range of local ports for outgoing
// connections: Linux's setting, or Linux's default and the IANA range
// together (32768-65535) where it cannot be read.
func ephemeralRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 {
			l, err1 := strconv.Atoi(f[0])
			h, err2 := strconv.Atoi(f[1])
			if err1 == nil && err2 == nil && l <= h {
				return l, h
			}
		}
	}
	return 32768, 65535
}
