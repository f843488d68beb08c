package pubsub

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// errNilConn is the cause of a dial that returned neither a connection nor
// an error.
var errNilConn = errors.New("pubsub: dial returned no connection")

// run is the Subscriber's goroutine: it keeps a connection up from the
// first Subscribe until Close, dialling again after every failure.
func (s *Subscriber) run() {
	defer close(s.done)
	defer s.failWaiters(ErrClosed)
	if !s.awaitChannels() {
		return
	}
	backoff := s.cfg.MinBackoff
	reconnect := false
	for {
		answered, dialled, err := s.connectOnce(reconnect)
		if s.ctx.Err() != nil {
			return
		}
		s.down(err, dialled, answered, backoff)
		if answered { // a working connection ended: dial again at once
			reconnect, backoff = true, s.cfg.MinBackoff
			continue
		}
		if !s.pause(backoff) {
			return
		}
		backoff = min(2*backoff, s.cfg.MaxBackoff)
	}
}

// awaitChannels waits until the set holds a channel; false on Close.
func (s *Subscriber) awaitChannels() bool {
	for {
		s.mu.Lock()
		n := len(s.set.chans)
		s.mu.Unlock()
		if n > 0 {
			return true
		}
		select {
		case <-s.ctx.Done():
			return false
		case <-s.wake:
		case <-s.kick:
		}
	}
}

// connectOnce dials and serves one connection until it ends. answered
// reports whether the connection replied (OnConnect ran); dialled whether
// the dial succeeded.
func (s *Subscriber) connectOnce(reconnect bool) (answered, dialled bool, err error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.DialTimeout)
	conn, err := s.dial(ctx)
	cancel()
	if err != nil {
		return false, false, err
	}
	answered, err = s.serve(conn, reconnect)
	return answered, true, err
}

// dial opens a connection with Config.Dial or Config.Open.
func (s *Subscriber) dial(ctx context.Context) (wire, error) {
	if s.cfg.Open != nil {
		c, err := s.cfg.Open(ctx)
		if err == nil && c == nil {
			err = errNilConn
		}
		return connWire{c}, err
	}
	c, err := s.cfg.Dial(ctx)
	if err == nil && c == nil {
		err = errNilConn
	}
	return redigoWire{c}, err
}

// down reports a failed dial or a lost connection: it fails the waiting
// WaitConfirmed calls, logs, and tells the owner.
func (s *Subscriber) down(err error, dialled, answered bool, backoff time.Duration) {
	s.failWaiters(fmt.Errorf("%w: %w", ErrDisconnected, err))
	if l := s.cfg.Logger; l != nil {
		switch {
		case !dialled:
			l.Warn("pubsub: cannot connect", "err", err, "retry_in", backoff)
		case !answered:
			l.Warn("pubsub: connection never answered", "err", err, "retry_in", backoff)
		default:
			l.Warn("pubsub: connection lost", "err", err)
		}
	}
	if f := s.cfg.OnDisconnect; f != nil {
		f(err)
	}
}

// failWaiters ends every waiting WaitConfirmed with err.
func (s *Subscriber) failWaiters(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set.failAll(err)
}

// pause waits d, or less when a WaitConfirmed wants a connection; false on
// Close. A kick left by a waiter that has ended since is ignored.
func (s *Subscriber) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return false
		case <-t.C:
			return true
		case <-s.kick:
			if s.waiting() {
				return true
			}
		}
	}
}

// waiting reports whether a WaitConfirmed is waiting.
func (s *Subscriber) waiting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.set.waiters) > 0
}
