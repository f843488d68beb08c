package redistest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/redisproc"
)

// Sentinel is one redis-sentinel process monitoring one master.
type Sentinel struct {
	tb     testing.TB
	Port   int
	Master string // the monitored master's name
	proc   *redisproc.Process
}

// StartReplica starts a redis-server replicating master and waits until
// its replication link is up. It is stopped at test cleanup.
func StartReplica(tb testing.TB, master *Node) *Node {
	tb.Helper()
	r := Start(tb, 1, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port)).Nodes[0]
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		info, _ := redis.String(r.Do("INFO", "replication"), nil)
		if strings.Contains(info, "master_link_status:up") {
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("redistest: replica %s never linked to %s", r.Addr(), master.Addr())
	return nil
}

// StartSentinel starts redis-sentinel monitoring master under masterName
// with quorum 1, so that it fails over alone. downAfter is its
// down-after-milliseconds (how long the master may be silent before it is
// considered down). The sentinel is stopped at test cleanup. extraConf lines
// are appended to its configuration file.
func StartSentinel(tb testing.TB, masterName string, master *Node, downAfter time.Duration, extraConf ...string) *Sentinel {
	tb.Helper()
	if !Available() {
		tb.Fatalf("redistest: %s not found; install it with: apt-get install -y redis-server redis-sentinel", Binary())
	}
	dir := tb.TempDir()
	conf := []string{
		fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1", masterName, master.Port),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", masterName, downAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", masterName, max(2*downAfter.Milliseconds(), 2000)),
		fmt.Sprintf("sentinel parallel-syncs %s 1", masterName),
	}
	conf = append(conf, extraConf...)
	path := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		tb.Fatalf("redistest: write sentinel config: %v", err)
	}
	p, err := redisproc.Start(redisproc.Config{
		Binary: Binary(), Dir: dir, ConfigFile: path,
		Args: []string{"--sentinel", "--protected-mode", "no", "--loglevel", "warning"},
	})
	if err != nil {
		tb.Fatalf("redistest: start sentinel: %v", err)
	}
	tb.Cleanup(p.Kill)
	return &Sentinel{tb: tb, Port: p.Port, Master: masterName, proc: p}
}

// Addr returns the sentinel's host:port.
func (s *Sentinel) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// Do runs one command on the sentinel and fails the test on error.
func (s *Sentinel) Do(cmd string, args ...any) any {
	s.tb.Helper()
	c, err := redis.Dial("tcp", s.Addr(), redis.DialConnectTimeout(2*time.Second), redis.DialReadTimeout(5*time.Second))
	if err != nil {
		s.tb.Fatalf("redistest: dial sentinel %s: %v", s.Addr(), err)
	}
	defer c.Close()
	v, err := c.Do(cmd, args...)
	if err != nil {
		s.tb.Fatalf("redistest: %s on sentinel %s: %v", cmd, s.Addr(), err)
	}
	return v
}

// MasterAddr returns the master address the sentinel currently reports.
func (s *Sentinel) MasterAddr() string {
	s.tb.Helper()
	hp, err := redis.Strings(s.Do("SENTINEL", "get-master-addr-by-name", s.Master), nil)
	if err != nil || len(hp) != 2 {
		return ""
	}
	return net.JoinHostPort(hp[0], hp[1])
}

// WaitReplicas waits until the sentinel knows n replicas of its master that
// are not flagged down, which a failover needs.
func (s *Sentinel) WaitReplicas(n int, timeout time.Duration) {
	s.tb.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		reps, _ := redis.Values(s.Do("SENTINEL", "replicas", s.Master), nil)
		ok := 0
		for _, r := range reps {
			fields, _ := redis.StringMap(r, nil)
			if !strings.Contains(fields["flags"], "down") && !strings.Contains(fields["flags"], "disconnected") {
				ok++
			}
		}
		if ok >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.tb.Fatalf("redistest: sentinel %s did not see %d replicas of %s within %v", s.Addr(), n, s.Master, timeout)
}

// Kill stops the sentinel with SIGKILL and waits for it.
func (s *Sentinel) Kill() { s.proc.Kill() }
