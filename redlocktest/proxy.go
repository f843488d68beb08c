package redlocktest

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// faultProxy is a TCP proxy on a fixed loopback address in front of one
// node. Clients always dial the proxy, so the address they know survives a
// restart that moves the node, and network faults behave the same whatever
// runs the node.
//
// It is written here rather than taken from toxiproxy: the only toxiproxy
// release the module proxy serves (v2.5.0) leaks a goroutine whenever a
// connection closes while its latency toxic holds a reply (the toxic's send
// to the next stage blocks forever), which the tests' leak check caught. This
// proxy owns every goroutine it starts and close waits for all of them.
type faultProxy struct {
	addr string

	mu          sync.Mutex
	ln          net.Listener // nil while refusing
	upstream    string
	partitioned bool
	delay       time.Duration
	cutReplies  bool
	conns       map[*proxyConn]struct{}
	closed      bool
	quit        chan struct{} // closed by close: cuts delays short

	wg sync.WaitGroup // the accept loop and every connection's goroutines
}

// proxyConn is one client connection and its connection to the node.
type proxyConn struct {
	client, node net.Conn
	once         sync.Once
	// dropped says that a partition dropped bytes of the connection, under
	// the proxy's mu; heal resets it.
	dropped bool
}

// shut closes both sides, resetting them (no FIN, unsent data dropped).
func (pc *proxyConn) shut() {
	pc.once.Do(func() {
		for _, c := range []net.Conn{pc.client, pc.node} {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = c.Close()
		}
	})
}

// chunk is a piece of a node's reply stream and when it arrived.
type chunk struct {
	data []byte
	at   time.Time
}

// newFaultProxy starts a proxy on a free loopback port forwarding to
// upstream, outside the ephemeral range (listenStable).
func newFaultProxy(upstream string) (*faultProxy, error) {
	ln, err := listenStable()
	if err != nil {
		return nil, fmt.Errorf("start proxy for %s: %w", upstream, err)
	}
	p := &faultProxy{ln: ln, addr: ln.Addr().String(), upstream: upstream,
		conns: map[*proxyConn]struct{}{}, quit: make(chan struct{})}
	p.wg.Add(1)
	go p.acceptLoop(ln)
	return p, nil
}

func (p *faultProxy) acceptLoop(ln net.Listener) {
	defer p.wg.Done()
	for {
		client, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(5 * time.Millisecond) // a transient accept error
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			client.Close()
			return
		}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(client)
	}
}

// serve connects a client to the node, in a goroutine of its own so that a
// slow dial does not hold up other clients.
func (p *faultProxy) serve(client net.Conn) {
	defer p.wg.Done()
	node, err := net.DialTimeout("tcp", p.target(), 2*time.Second)
	if err != nil { // the node is down: the client sees its connection closed
		client.Close()
		return
	}
	pc := &proxyConn{client: client, node: node}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		pc.shut()
		return
	}
	p.conns[pc] = struct{}{}
	p.wg.Add(3)
	p.mu.Unlock()
	replies := make(chan chunk, 256)
	go p.pumpRequests(pc)
	go p.pumpReplies(pc, replies)
	go p.deliverReplies(pc, replies)
}

// faults returns the current fault settings.
func (p *faultProxy) faults() (partitioned bool, delay time.Duration, cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.partitioned, p.delay, p.cutReplies
}

// forget drops a finished connection from the set.
func (p *faultProxy) forget(pc *proxyConn) {
	pc.shut()
	p.mu.Lock()
	delete(p.conns, pc)
	p.mu.Unlock()
}

// drops reports whether the node is partitioned away, and marks pc as a
// connection whose bytes it drops.
func (p *faultProxy) drops(pc *proxyConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.partitioned {
		pc.dropped = true
	}
	return p.partitioned
}

// pumpRequests copies the client's bytes to the node, dropping them while
// the node is partitioned away.
func (p *faultProxy) pumpRequests(pc *proxyConn) {
	defer p.wg.Done()
	defer p.forget(pc)
	buf := make([]byte, 32<<10)
	for {
		n, err := pc.client.Read(buf)
		if n > 0 {
			if !p.drops(pc) {
				if _, werr := pc.node.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// pumpReplies reads the node's replies and hands them to deliverReplies,
// or resets the connection when replies are cut.
func (p *faultProxy) pumpReplies(pc *proxyConn, out chan<- chunk) {
	defer p.wg.Done()
	defer close(out)
	defer p.forget(pc)
	buf := make([]byte, 32<<10)
	for {
		n, err := pc.node.Read(buf)
		if n > 0 {
			if _, _, cut := p.faults(); cut {
				return // forget resets both sides: the command ran, its reply is lost
			}
			out <- chunk{data: append([]byte(nil), buf[:n]...), at: time.Now()}
		}
		if err != nil {
			return
		}
	}
}

// deliverReplies writes the replies to the client, each one no sooner than
// the delay after it arrived, and drops them while partitioned. After a
// write error it drains what is left, so pumpReplies never blocks.
func (p *faultProxy) deliverReplies(pc *proxyConn, in <-chan chunk) {
	defer p.wg.Done()
	failed := false
	for c := range in {
		if failed {
			continue
		}
		_, delay, _ := p.faults()
		if wait := time.Until(c.at.Add(delay)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-p.quit:
				t.Stop()
			}
		}
		if p.drops(pc) {
			continue
		}
		if _, err := pc.client.Write(c.data); err != nil {
			failed = true
			pc.shut()
		}
	}
}

// target returns the node's current address.
func (p *faultProxy) target() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.upstream
}

// setUpstream points the proxy at a node's new address, keeping its own.
// Open connections are closed, as a restart would close them anyway.
func (p *faultProxy) setUpstream(upstream string) error {
	p.mu.Lock()
	p.upstream = upstream
	open := make([]*proxyConn, 0, len(p.conns))
	for pc := range p.conns {
		open = append(open, pc)
	}
	p.mu.Unlock()
	for _, pc := range open {
		pc.shut()
	}
	return nil
}

// refuse stops listening, so that connecting to the proxy's address is
// refused, as at a host whose server died, and resets the open
// connections. It lasts until listen.
func (p *faultProxy) refuse() {
	p.mu.Lock()
	ln := p.ln
	p.ln = nil
	open := make([]*proxyConn, 0, len(p.conns))
	for pc := range p.conns {
		open = append(open, pc)
	}
	p.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	for _, pc := range open {
		pc.shut()
	}
}

// listen ends refuse: the proxy listens again on its own address.
func (p *faultProxy) listen() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("listen again on %s: %w", p.addr, err)
	}
	p.ln = ln
	p.wg.Add(1)
	go p.acceptLoop(ln)
	return nil
}

// partition drops every byte in both directions, on open and new
// connections alike, without closing anything.
func (p *faultProxy) partition() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partitioned = true
	return nil
}

// delay holds back every reply by d; d <= 0 removes the delay.
func (p *faultProxy) setDelay(d time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = max(d, 0)
	return nil
}

// cut lets commands through but resets a connection as soon as the node's
// reply reaches the proxy, instead of forwarding it.
func (p *faultProxy) cut() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutReplies = true
	return nil
}

// heal removes every fault, and resets the connections that a partition
// dropped bytes of. TCP never skips bytes: it delivers them late or gives
// up on the connection. A connection that carried on after the gap would
// pair the replies that come after it with the commands that the node
// never got, for a client that keeps connections whose commands timed out
// (rueidis does, and discards the late replies in order).
func (p *faultProxy) heal() {
	p.mu.Lock()
	p.partitioned, p.delay, p.cutReplies = false, 0, false
	var broken []*proxyConn
	for pc := range p.conns {
		if pc.dropped {
			broken = append(broken, pc)
		}
	}
	p.mu.Unlock()
	for _, pc := range broken {
		pc.shut()
	}
}

// close stops the proxy, closes its connections and waits for all of its
// goroutines.
func (p *faultProxy) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.quit)
	ln := p.ln
	p.ln = nil
	open := make([]*proxyConn, 0, len(p.conns))
	for pc := range p.conns {
		open = append(open, pc)
	}
	p.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	for _, pc := range open {
		pc.shut()
	}
	p.wg.Wait()
}
