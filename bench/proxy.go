package main

import (
	"fmt"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// delayProxy is an embedded toxiproxy in front of one node that adds a
// fixed latency to every round trip: half on the way to the node, half on
// the way back. It is driven in-process and serves no HTTP API.
type delayProxy struct {
	p *toxiproxy.Proxy
}

// startDelayProxy listens on a free loopback port and forwards to upstream
// with rtt added per round trip.
func startDelayProxy(upstream string, rtt time.Duration) (*delayProxy, error) {
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "slow-node", "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("bench: start delay proxy: %w", err)
	}
	half := rtt.Milliseconds() / 2
	for _, stream := range []string{"upstream", "downstream"} {
		js := fmt.Sprintf(`{"name":"delay_%s","type":"latency","stream":%q,"toxicity":1,"attributes":{"latency":%d}}`,
			stream, stream, half)
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			p.Stop()
			return nil, fmt.Errorf("bench: add latency to delay proxy: %w", err)
		}
	}
	return &delayProxy{p: p}, nil
}

// addr is where clients connect.
func (d *delayProxy) addr() string { return d.p.Listen }

// close stops the proxy and closes its connections.
func (d *delayProxy) close() { d.p.Stop() }
