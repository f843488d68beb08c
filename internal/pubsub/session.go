package pubsub

import (
	"context"
	"sync/atomic"
	"time"
)

// session is one connection: a reader and a writer goroutine, watched by
// the Subscriber's goroutine, which also runs the health check.
type session struct {
	s         *Subscriber
	conn      wire
	reconnect bool
	lastSeen  atomic.Int64 // unix nanoseconds of the last reply read
	up        atomic.Bool  // the first PONG came: OnConnect ran
}

// serve runs conn until it fails, stops answering, or the Subscriber
// closes; it returns after the reader and the writer have exited and conn
// is closed. answered reports whether the connection came up.
func (s *Subscriber) serve(conn wire, reconnect bool) (answered bool, err error) {
	ss := &session{s: s, conn: conn, reconnect: reconnect}
	ss.lastSeen.Store(time.Now().UnixNano())
	s.mu.Lock()
	s.set.reset(true) // SUBSCRIBE everything, then PING: its PONG means up
	s.mu.Unlock()

	ctx, cancel := context.WithCancel(s.ctx)
	readc, writec := make(chan error, 1), make(chan error, 1)
	go func() { readc <- ss.read(ctx) }()
	go func() { writec <- ss.write(ctx) }()
	running, err := ss.watch(readc, writec)
	cancel() // the reader's receive closes the socket, which unblocks a write too
	for ; running > 0; running-- {
		select {
		case <-readc:
		case <-writec:
		}
	}

	s.mu.Lock()
	s.set.reset(false)
	s.mu.Unlock()
	conn.close()
	return ss.up.Load(), err
}

// watch waits for the reader or the writer to fail, the health check to
// fail, or Close; it returns why, and how many of the two still run.
func (ss *session) watch(readc, writec <-chan error) (int, error) {
	interval := ss.s.cfg.HealthInterval
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case err := <-readc:
			return 1, err
		case err := <-writec:
			return 1, err
		case <-ss.s.ctx.Done():
			return 2, ErrClosed
		case <-t.C:
			if time.Since(time.Unix(0, ss.lastSeen.Load())) > 2*interval {
				return 2, ErrHealthCheck
			}
			ss.s.mu.Lock()
			ss.s.set.pingDue = true
			ss.s.mu.Unlock()
			signal(ss.s.wake)
		}
	}
}

// write sends what the set asks for until ctx ends or a write fails. It is
// the connection's only writer, so commands reach the server in the order
// the set changed.
func (ss *session) write(ctx context.Context) error {
	for {
		ss.s.mu.Lock()
		subs, unsubs, ping := ss.s.set.take()
		ss.s.mu.Unlock()
		if err := ss.conn.send(ctx, subs, unsubs, ping); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ss.s.wake:
		}
	}
}

// read handles replies until ctx ends or the connection fails.
func (ss *session) read(ctx context.Context) error {
	for {
		p, err := ss.conn.receive(ctx)
		if err != nil {
			return err
		}
		ss.lastSeen.Store(time.Now().UnixNano())
		ss.handle(p)
	}
}

// handle acts on one reply; callbacks run with no lock held.
func (ss *session) handle(p push) {
	s := ss.s
	switch p.kind {
	case kindMessage:
		if s.delivers(p.channel) && s.cfg.OnMessage != nil {
			s.cfg.OnMessage(p.channel, p.data)
		}
	case kindKeys:
		if s.delivers(p.channel) && s.cfg.OnKeys != nil {
			s.cfg.OnKeys(p.channel, p.keys)
		}
	case kindSubscription:
		s.mu.Lock()
		confirmed := s.set.reply(p.channel)
		s.mu.Unlock()
		if confirmed && s.cfg.OnConfirm != nil {
			s.cfg.OnConfirm(p.channel)
		}
	case kindPong:
		if ss.up.Swap(true) {
			return
		}
		if ss.reconnect && s.cfg.Logger != nil {
			s.cfg.Logger.Info("pubsub: reconnected")
		}
		if s.cfg.OnConnect != nil {
			s.cfg.OnConnect(ss.reconnect)
		}
	}
}

// delivers reports whether messages of channel go to the callbacks, taking
// the Subscriber's lock for the look-up only.
func (s *Subscriber) delivers(channel string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.set.delivers(channel)
}
