// Package delayproxy is a TCP proxy on a loopback port that adds a fixed
// latency to every round trip to one server, for tests and benchmarks of
// slow nodes: the server is real, only the network in front of it is slow.
package delayproxy

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// Proxy is a TCP proxy on a loopback port in front of one node that
// adds a fixed latency to every round trip: half on the way to the node,
// half on the way back. Each direction of a connection has a reader that
// stamps what arrives and a writer that forwards it once its delay has
// passed, so the delay does not cut throughput and ordering is kept.
//
// (toxiproxy v2.5.0, the obvious library, leaks a goroutine per delayed
// chunk left when a connection closes; this repository's redlocktest moved
// off it for that reason.)
type Proxy struct {
	ln    net.Listener
	up    string
	half  time.Duration
	done  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// Start listens on a free loopback port and forwards to upstream
// with rtt added per round trip.
func Start(upstream string, rtt time.Duration) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("delayproxy: %w", err)
	}
	p := &Proxy{ln: ln, up: upstream, half: rtt / 2, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is where clients connect.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting, closes every connection and waits for every
// goroutine of the proxy.
func (p *Proxy) Close() {
	close(p.done)
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// track registers c for close; it reports false when the proxy is closing.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return false
	default:
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		server, err := net.DialTimeout("tcp", p.up, 5*time.Second)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !p.track(client) || !p.track(server) {
			_ = client.Close()
			_ = server.Close()
			return
		}
		p.wg.Add(4)
		go p.pipe(client, server)
		go p.pipe(server, client)
	}
}

// chunk is what one read returned, stamped with its arrival.
type chunk struct {
	data []byte
	at   time.Time
}

// pipe forwards src to dst with the one-way delay. When either side ends,
// both connections are closed, which ends the other direction too.
func (p *Proxy) pipe(src, dst net.Conn) {
	defer p.wg.Done()
	q := make(chan chunk, 1024)
	go func() { // the writer
		defer p.wg.Done()
		// In this order: close both sides, which ends the reader, then wait
		// for the reader to close q.
		defer drain(q)
		defer p.untrack(dst)
		defer p.untrack(src)
		for c := range q {
			if wait := time.Until(c.at.Add(p.half)); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-p.done:
					t.Stop()
					return
				}
			}
			if _, err := dst.Write(c.data); err != nil {
				return
			}
		}
	}()
	defer close(q)
	for {
		buf := make([]byte, 32<<10)
		n, err := src.Read(buf)
		if n > 0 {
			q <- chunk{data: buf[:n], at: time.Now()}
		}
		if err != nil {
			return // EOF or closed: the writer delivers what is queued, then closes both sides
		}
	}
}

// drain discards what is left in q until the reader closes it.
func drain(q <-chan chunk) {
	for range q {
	}
}
