package sdlstore

import (
	"context"
	"log/slog"
	"sync"
)

// Event delivery.
//
// The reader of each instance's subscriber connection only queues what it
// receives; callbacks run elsewhere (the listener goroutine, or the caller
// of HandleEvents), so a slow callback never stalls a connection. The queue
// holds at most WithEventQueue events for the whole Store. When it is full
// a new event is dropped, counted (DroppedEvents) and, once per overflow,
// logged: the alternative, making the reader wait, would stall the health
// check and every other channel of the instance, and a dropped event is no
// worse than the at-most-once delivery Redis pub/sub already gives.

// event is one received notification, waiting for delivery.
type event struct {
	sub     *subscriber
	full    string // "{ns},channel"
	channel string
	events  []string
}

// eventQueue holds received events and the delivery mode.
type eventQueue struct {
	mu       sync.Mutex
	ring     ring
	limit    int
	dropped  uint64 // events dropped on a full queue, ever
	overflow uint64 // events dropped since the queue last took one
	logger   *slog.Logger
	polling  bool // events wait for HandleEvents
	explicit bool // StartEventListener was called
	running  bool // the listener goroutine was started
	notify   chan struct{}
}

func (q *eventQueue) init(cfg config) {
	q.polling = cfg.polling
	q.limit = cfg.eventQueue
	q.logger = cfg.logger
	q.notify = make(chan struct{}, 1)
}

// push queues e, or drops it when the queue is full. It runs in a
// connection's reader and never waits.
func (q *eventQueue) push(e event) {
	q.mu.Lock()
	full := q.ring.len() >= q.limit
	var recovered uint64
	if full {
		q.dropped++
		q.overflow++
	} else {
		q.ring.push(e, q.limit)
		recovered, q.overflow = q.overflow, 0
	}
	firstDrop, total := full && q.overflow == 1, q.dropped
	q.mu.Unlock()
	if l := q.logger; l != nil {
		if firstDrop {
			l.Warn("sdlstore: event queue full, dropping notifications", "capacity", q.limit, "dropped_total", total)
		}
		if recovered > 0 {
			l.Warn("sdlstore: event queue takes notifications again", "dropped", recovered, "dropped_total", total)
		}
	}
	if !full {
		q.wake()
	}
}

func (q *eventQueue) pop() (event, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ring.pop()
}

func (q *eventQueue) wake() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *eventQueue) isPolling() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.polling
}

// DroppedEvents returns how many notifications were dropped, since the
// Store was made, because the event queue was full (see WithEventQueue).
// Events of channels unsubscribed before delivery are not counted.
func (s *Store) DroppedEvents() uint64 {
	s.ev.mu.Lock()
	defer s.ev.mu.Unlock()
	return s.ev.dropped
}

// StartEventListener switches to background delivery: from now on every
// callback runs in the Store's listener goroutine, and HandleEvents is
// rejected. It is the default mode already (unless WithEventPolling), so it
// only matters after polling; as in ricsdl, a second call is an
// ErrRejectedByBackend.
func (s *Store) StartEventListener() error {
	if err := s.usable(); err != nil {
		return err
	}
	s.ev.mu.Lock()
	if s.ev.explicit {
		s.ev.mu.Unlock()
		return rejected("event listener already started")
	}
	s.ev.explicit, s.ev.polling = true, false
	s.ev.mu.Unlock()
	s.ensureListener()
	return nil
}

// HandleEvents delivers at most one queued notification in polling mode
// (WithEventPolling): it runs the channel's callback in the caller's
// goroutine and returns the channel and events with ok true, or returns
// ok false at once when nothing is queued. It never waits for the network.
// Without polling mode, or after StartEventListener, it is an
// ErrRejectedByBackend, as in ricsdl.
func (s *Store) HandleEvents(ctx context.Context) (channel string, events []string, ok bool, err error) {
	if err := s.usable(); err != nil {
		return "", nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return "", nil, false, backendErr("handle events", err)
	}
	if !s.ev.isPolling() {
		return "", nil, false, rejected("events are delivered by the event listener; HandleEvents needs WithEventPolling")
	}
	for {
		e, ok := s.ev.pop()
		if !ok {
			return "", nil, false, nil
		}
		if cb := e.sub.callback(e.full); cb != nil {
			cb(e.channel, e.events)
			return e.channel, e.events, true, nil
		}
	}
}

// ensureListener starts the listener goroutine once.
func (s *Store) ensureListener() {
	s.ev.mu.Lock()
	defer s.ev.mu.Unlock()
	if s.ev.running {
		return
	}
	if s.spawn(s.listen) {
		s.ev.running = true
	}
}

// listen delivers queued events until Close.
func (s *Store) listen() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.ev.notify:
		}
		for s.ctx.Err() == nil {
			if s.ev.isPolling() {
				break
			}
			e, ok := s.ev.pop()
			if !ok {
				break
			}
			if cb := e.sub.callback(e.full); cb != nil {
				cb(e.channel, e.events)
			}
		}
	}
}
