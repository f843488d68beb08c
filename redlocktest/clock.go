package redlocktest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/testkit/clockshim"
)

// Where the Docker backend mounts a node's shim and offset file.
const (
	shimMountDir  = "/clockshim"
	shimMountLib  = shimMountDir + "/clockshim.so"
	shimMountFile = shimMountDir + "/offset"
)

// newClocks makes the clocks WithClockShim asks for, one per listed node of
// n (every node when none is listed), or nil when it was not given.
func newClocks(tb testing.TB, cfg config, n int) []*clockshim.Clock {
	tb.Helper()
	if !cfg.clockShim {
		return nil
	}
	for _, i := range cfg.clockNodes {
		if i < 0 || i >= n {
			tb.Fatalf("redlocktest: WithClockShim(%d): no such node; the cluster has nodes 0 to %d", i, n-1)
		}
	}
	clocks := make([]*clockshim.Clock, n)
	for i := range clocks {
		if len(cfg.clockNodes) == 0 || slices.Contains(cfg.clockNodes, i) {
			clocks[i] = clockshim.New(tb)
		}
	}
	return clocks
}

// dockerClock returns the bind mounts and environment that run a
// container on clock.
func dockerClock(clock *clockshim.Clock) (mounts, env []string) {
	mounts = []string{clock.Lib() + ":" + shimMountLib + ":ro", clock.File() + ":" + shimMountFile + ":ro"}
	env = []string{"LD_PRELOAD=" + shimMountLib, clockshim.EnvFile + "=" + shimMountFile}
	return mounts, env
}

// SetClockOffset steps node i's wall clock to the real one plus d, at
// once, while the node runs: Redis then answers TIME, and expires keys, by
// the stepped clock (a key whose expiry the step passes is gone at once),
// and its uptime in INFO, which Redis takes from the wall clock, moves
// with it. The offset is not cumulative: SetClockOffset(i, 0) puts the
// clock back. It stays across Kill and Restart. Node i must run on the
// clock shim (WithClockShim), or the test fails; so it does when a running
// node's TIME does not follow the step within a second, which is what an
// image whose loader cannot preload the shim gives. Network faults of the
// node do not stop the check, which talks to the node behind its proxy; a
// killed or paused node is not checked.
func (c *Cluster) SetClockOffset(i int, d time.Duration) {
	c.tb.Helper()
	c.check("SetClockOffset", i)
	c.mu.Lock()
	defer c.mu.Unlock()
	if i >= len(c.clocks) || c.clocks[i] == nil {
		c.fail("SetClockOffset", i, fmt.Errorf("the node runs on the real clock; start the cluster WithClockShim(%d)", i))
	}
	c.clocks[i].Set(c.tb, d)
	if c.state[i] != stateRunning {
		return
	}
	off, err := clockOffset(c.proxies[i].target())
	if err != nil {
		c.fail("SetClockOffset", i, fmt.Errorf("read the node's TIME after the step: %w", err))
	}
	if diff := off - d; diff > time.Second || diff < -time.Second {
		c.fail("SetClockOffset", i, fmt.Errorf("the node's clock is %v off the real one after a step to %v: the clock shim is not in effect (an image without glibc?)", off.Round(time.Millisecond), d))
	}
}

// clockOffset reads the TIME of the server at addr and returns how far it
// is off this machine's clock, taken at the middle of the round trip.
func clockOffset(addr string) (time.Duration, error) {
	conn, err := redis.Dial("tcp", addr,
		redis.DialConnectTimeout(time.Second),
		redis.DialReadTimeout(time.Second),
		redis.DialWriteTimeout(time.Second))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	sent := time.Now()
	v, err := redis.Int64s(conn.Do("TIME"))
	got := time.Now()
	if err != nil {
		return 0, err
	}
	if len(v) != 2 {
		return 0, fmt.Errorf("TIME replied %v", v)
	}
	mid := sent.Add(got.Sub(sent) / 2)
	return time.Unix(v[0], v[1]*1000).Sub(mid), nil
}
