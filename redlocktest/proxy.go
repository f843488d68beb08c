package redlocktest

import (
	"context"
	"fmt"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Names of the toxics a faultProxy installs.
const (
	toxicPartitionUp   = "partition_up"
	toxicPartitionDown = "partition_down"
	toxicDelay         = "delay"
	toxicCutReplies    = "cut_replies"
)

// faultProxy is an embedded toxiproxy listening on a fixed loopback address
// in front of one node. Clients always dial the proxy, so the address they
// know survives a restart that moves the node, and network faults behave
// the same whatever runs the node.
type faultProxy struct {
	p    *toxiproxy.Proxy
	addr string
}

// newProxyServer returns the toxiproxy server that owns a cluster's proxies.
// It serves no HTTP API: the proxies are driven in-process.
func newProxyServer() *toxiproxy.ApiServer {
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
}

// newFaultProxy starts a proxy on a free loopback port forwarding to upstream.
func newFaultProxy(srv *toxiproxy.ApiServer, name, upstream string) (*faultProxy, error) {
	p := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("start proxy for %s: %w", upstream, err)
	}
	return &faultProxy{p: p, addr: p.Listen}, nil
}

// setUpstream points the proxy at a node's new address, keeping its own.
// Open connections are closed, as a restart would close them anyway.
func (f *faultProxy) setUpstream(upstream string) error {
	if f.p.Upstream == upstream {
		return nil
	}
	err := f.p.Update(&toxiproxy.Proxy{Listen: f.addr, Upstream: upstream, Enabled: true})
	if err != nil {
		return fmt.Errorf("move proxy %s to %s: %w", f.addr, upstream, err)
	}
	return nil
}

// addToxic installs a toxic unless one of that name is there already.
func (f *faultProxy) addToxic(name, typ, stream, attrs string) error {
	if f.p.Toxics.GetToxic(name) != nil {
		return nil
	}
	js := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name, typ, stream, attrs)
	if _, err := f.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
		return fmt.Errorf("add %s fault on %s: %w", typ, f.addr, err)
	}
	return nil
}

// removeToxic removes a toxic if it is installed.
func (f *faultProxy) removeToxic(name string) error {
	if f.p.Toxics.GetToxic(name) == nil {
		return nil
	}
	if err := f.p.Toxics.RemoveToxic(context.Background(), name); err != nil {
		return fmt.Errorf("remove %s fault on %s: %w", name, f.addr, err)
	}
	return nil
}

// partition drops every byte in both directions, on open and new
// connections alike, without closing anything.
func (f *faultProxy) partition() error {
	if err := f.addToxic(toxicPartitionUp, "timeout", "upstream", `{"timeout":0}`); err != nil {
		return err
	}
	return f.addToxic(toxicPartitionDown, "timeout", "downstream", `{"timeout":0}`)
}

// delay holds back every reply by d; d <= 0 removes the delay.
func (f *faultProxy) delay(d time.Duration) error {
	if err := f.removeToxic(toxicDelay); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	return f.addToxic(toxicDelay, "latency", "downstream", fmt.Sprintf(`{"latency":%d}`, d.Milliseconds()))
}

// cutReplies lets commands through but closes a connection as soon as the
// node's reply reaches the proxy, instead of forwarding it.
func (f *faultProxy) cutReplies() error {
	return f.addToxic(toxicCutReplies, "reset_peer", "downstream", `{"timeout":0}`)
}

// heal removes every fault.
func (f *faultProxy) heal() {
	f.p.Toxics.ResetToxics(context.Background())
}

// close stops the proxy and closes its connections.
func (f *faultProxy) close() {
	f.p.Stop()
}
