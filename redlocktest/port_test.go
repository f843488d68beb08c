package redlocktest

import (
	"net"
	"strconv"
	"testing"
)

// TestProxyPortOutsideEphemeralRange: a proxy's port is one that no
// outgoing connection can take while the proxy is not listening.
func TestProxyPortOutsideEphemeralRange(t *testing.T) {
	lo, hi := ephemeralRange()
	for range 20 {
		ln, err := listenStable()
		if err != nil {
			t.Fatal(err)
		}
		_, p, _ := net.SplitHostPort(ln.Addr().String())
		ln.Close()
		port, _ := strconv.Atoi(p)
		if port >= lo && port <= hi {
			t.Fatalf("port %d is inside the ephemeral range %d-%d", port, lo, hi)
		}
	}
}

func TestOutside(t *testing.T) {
	for _, c := range []struct{ lo, hi int }{{32768, 60999}, {1024, 60000}, {1024, 65535}} {
		for range 100 {
			p, ok := outside(c.lo, c.hi)
			switch {
			case c.lo == 1024 && c.hi == 65535:
				if ok {
					t.Fatalf("outside(%d, %d) = %d with no room", c.lo, c.hi, p)
				}
			case !ok || p < 1024 || p > 65535 || (p >= c.lo && p <= c.hi):
				t.Fatalf("outside(%d, %d) = %d, %v", c.lo, c.hi, p, ok)
			}
		}
	}
}
