package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// embedded is a set of in-process Redis nodes (miniredis) on loopback
// ports, for trying redlock without a Redis installation. Keys expire on
// the wall clock, as on a real server. They are not real Redis servers:
// their numbers say nothing about Redis performance.
type embedded struct {
	nodes []*miniredis.Miniredis
	addrs []string
}

// startEmbedded starts n nodes on ports port, port+1, ...; port 0 picks
// free ports.
func startEmbedded(n, port int) (*embedded, error) {
	if n < 1 {
		return nil, usageErr("--nodes %d: at least 1 node is needed", n)
	}
	if port < 0 || port+n-1 > 65535 {
		return nil, usageErr("--port %d: ports %d..%d are not valid", port, port, port+n-1)
	}
	e := &embedded{}
	for i := 0; i < n; i++ {
		m := miniredis.NewMiniRedis()
		m.ClockTTL(true)
		addr := "127.0.0.1:0"
		if port != 0 {
			addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port+i))
		}
		if err := m.StartAddr(addr); err != nil {
			e.close()
			return nil, exitCode(exitUnavailable, fmt.Errorf("embedded node %d on %s: %w", i, addr, err))
		}
		e.nodes = append(e.nodes, m)
		e.addrs = append(e.addrs, m.Addr())
		if err := m.Server().Register("CONFIG", durableConfig); err != nil {
			e.close()
			return nil, err
		}
	}
	return e, nil
}

// durableConfig answers CONFIG GET, the one CONFIG command the lock sends,
// with the settings of a durable node: an embedded node never restarts
// while it lives (kill stops it for good), so the node guard may let it
// vote at once.
func durableConfig(c *server.Peer, _ string, _ []string) {
	c.WriteLen(4)
	for _, s := range []string{"appendonly", "yes", "appendfsync", "always"} {
		c.WriteBulk(s)
	}
}

// urls returns the redis:// URL of every node.
func (e *embedded) urls() []string {
	out := make([]string, len(e.addrs))
	for i, a := range e.addrs {
		out[i] = "redis://" + a
	}
	return out
}

// envLine is the REDLOCK_NODES=... line for the nodes.
func (e *embedded) envLine() string { return EnvNodes + "=" + strings.Join(e.urls(), ",") }

// kill stops node i, dropping its connections and data.
func (e *embedded) kill(i int) { e.nodes[i].Close() }

// close stops every node.
func (e *embedded) close() {
	for _, m := range e.nodes {
		m.Close()
	}
}
