package pubsub

import (
	"context"
	"fmt"
	"sync"
)

// Subscriber keeps one pub/sub connection to one node subscribed to a set
// of channels. It is safe for concurrent use. See the package doc for its
// callbacks and goroutines.
type Subscriber struct {
	cfg    Config
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine started by New returned
	wake   chan struct{} // the set changed or a PING is due: the writer has work
	kick   chan struct{} // a WaitConfirmed wants a connection: cut a backoff short

	mu     sync.Mutex // guards closed and set; never held during I/O or a callback
	closed bool
	set    set
}

// New checks cfg and starts the Subscriber's goroutine through cfg.Spawn.
// It dials nothing before the first Subscribe. It fails with
// ErrInvalidConfig for an unusable cfg and with ErrClosed when Spawn
// refuses.
func New(cfg Config) (*Subscriber, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	s := &Subscriber{
		cfg:  cfg,
		done: make(chan struct{}),
		wake: make(chan struct{}, 1),
		kick: make(chan struct{}, 1),
		set:  newSet(),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if !cfg.Spawn(s.run) {
		s.cancel()
		return nil, ErrClosed
	}
	return s, nil
}

// Subscribe adds channels to the set and returns at once; a channel already
// in the set stays subscribed once (the set counts no references). The
// SUBSCRIBE is written by the Subscriber's writer, never by the caller, so
// Subscribe may be called with the caller's locks held. It fails only with
// ErrClosed.
func (s *Subscriber) Subscribe(channels ...string) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	changed := s.set.add(channels)
	s.mu.Unlock()
	if changed {
		signal(s.wake)
	}
	return nil
}

// Unsubscribe removes channels from the set and returns at once, like
// Subscribe; channels not in the set are ignored. No message of them is
// delivered after it returns, except one whose delivery already began.
// WaitConfirmed calls waiting for one of them fail with ErrNotSubscribed.
// It fails only with ErrClosed.
func (s *Subscriber) Unsubscribe(channels ...string) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	changed := s.set.remove(channels)
	s.mu.Unlock()
	if changed {
		signal(s.wake)
	}
	return nil
}

// WaitConfirmed returns nil once Redis has confirmed every one of channels
// on the current connection (at once if it already has). It fails with
// ErrNotSubscribed when one is not in the set or leaves it meanwhile, with
// an error matching ErrDisconnected and its cause when the connection fails
// or cannot be made first, with ctx.Err() when ctx ends, and with ErrClosed
// after Close. A disconnected Subscriber dials at once for it, without
// finishing its backoff. It must not be called from a callback.
func (s *Subscriber) WaitConfirmed(ctx context.Context, channels ...string) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	w, err := s.set.wait(channels)
	s.mu.Unlock()
	if w == nil {
		if err != nil {
			return fmt.Errorf("%w: %q", err, channels)
		}
		return nil
	}
	signal(s.kick)
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
	}
	s.mu.Lock()
	_, waiting := s.set.waiters[w]
	delete(s.set.waiters, w)
	s.mu.Unlock()
	if !waiting { // it ended meanwhile: report how
		return <-w.done
	}
	return ctx.Err()
}

// Confirmed reports whether channel is in the set and confirmed on the
// current connection: a message published on it now is delivered. A
// channel taken out and put back before the writer ran was never
// unsubscribed on the server; it is confirmed at once, and OnConfirm is not
// called for it again.
func (s *Subscriber) Confirmed(channel string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.set.chans[channel]
	return !s.closed && c != nil && c.confirmed()
}

// Close stops the Subscriber: it closes the connection, fails waiting
// WaitConfirmed calls with ErrClosed and waits for its goroutines. Later
// calls of any method fail with ErrClosed; Close itself is idempotent. It
// must not be called from a callback, nor while holding a lock that a
// callback takes.
func (s *Subscriber) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	<-s.done
}

// signal leaves a wake-up in c unless one is pending.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
