package redlock

import (
	"errors"
	"sync"
	"time"
)

// errReleased is the cause of a holding ended by Release: Err reports nil
// for it.
var errReleased = errors.New("redlock: released")

// holding is one period during which a lock is held, from a successful
// attempt to Release, loss or Close. All of its state is here, modelled on
// context.WithCancelCause: it is live until end records a cause, once;
// Done is closed then, and Err reports the cause. The extender, Do and the
// owner all look at this one value.
type holding struct {
	arg     any     // the token (a string), boxed once for every command that carries it
	counted uint64  // the nodes whose SET was counted in the attempt
	fin     *finish // transports that are not FIFO: the attempt's calls
	fence   int64   // the fencing token; 0 when not fenced (fence.go)
	l       *Lock   // its lock; nil for a MultiLock's set

	mu         sync.Mutex
	cause      error                // nil while live
	done       chan struct{}        // made on demand: most holders never ask
	onEnd      *[]func(cause error) // made on demand, like done: one word in every holding
	validUntil time.Duration        // end of the current validity, on monotonic()
	begun      time.Duration        // when it started, on monotonic(): for observers

	// The extender's bookkeeping, under its mu (autoextend.go): the
	// holding's place in the expiry queue and its autoextension schedule.
	expAt     time.Duration // validUntil as the expiry queue knows it
	at        time.Duration // when the next extension is due, on monotonic()
	slack     time.Duration // how much earlier it may join a batch
	until     time.Duration // autoextension stops after this; 0: never
	pos       int32         // 1 + its index in its bucket of the expiry queue; 0: not in it
	qpos      int32         // 1 + its index in its bucket of the extension queue; 0: not in it
	expIn     *[]*holding   // its bucket of the expiry queue, while in it
	qIn       *[]*holding   // its bucket of the extension queue, while in it
	extending bool          // autoextended
	busy      bool          // part of the batch in flight

	// Beside pos and the flags, so that a holding keeps its size class.
	why     LossCause // how it was lost, once it was (under mu)
	inSet   bool      // a part of a MultiLock's set, which reports its loss
	heldPos int32     // 1 + its index in its owner's held; 0: not in it (under the owner's mu)

	// watchNext is the next live holding of the same name that the loss
	// detector watches, under its mu (lossdetection.go): a chain instead of
	// a record per name, 30-40 B less per held lock in its map. The holding
	// stays in its size class (176 B) with it.
	watchNext *holding
}

// token is the holding's token.
func (h *holding) token() string {
	t, _ := h.arg.(string)
	return t
}

// Done returns a channel closed when the holding ends.
func (h *holding) Done() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done == nil {
		if h.cause != nil {
			return closedChan
		}
		h.done = make(chan struct{})
	}
	return h.done
}

// Err returns nil while the holding is live or after Release, and the
// cause of any other end.
func (h *holding) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cause == errReleased {
		return nil
	}
	return h.cause
}

// live reports whether the holding has not ended.
func (h *holding) live() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cause == nil
}

// end ends the holding with cause, once; it reports whether this call
// ended it. The functions registered with afterEnd run after it, in the
// caller's goroutine.
func (h *holding) end(cause error) bool {
	h.mu.Lock()
	if h.cause != nil {
		h.mu.Unlock()
		return false
	}
	h.cause = cause
	if h.done != nil {
		close(h.done)
	}
	var fns []func(cause error)
	if h.onEnd != nil {
		fns, h.onEnd = *h.onEnd, nil
	}
	h.mu.Unlock()
	for _, fn := range fns {
		fn(h.Err())
	}
	return true
}

// afterEnd registers fn to run when the holding ends (at once if it has
// ended) and returns a function that unregisters it.
func (h *holding) afterEnd(fn func(cause error)) (stop func()) {
	h.mu.Lock()
	if h.cause != nil {
		h.mu.Unlock()
		fn(h.Err())
		return func() {}
	}
	if h.onEnd == nil {
		h.onEnd = new([]func(cause error))
	}
	fns := h.onEnd
	*fns = append(*fns, fn)
	i := len(*fns) - 1
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.onEnd == fns {
			(*fns)[i] = func(error) {}
		}
	}
}

// remainingAt is how long the validity lasts from now, on monotonic().
func (h *holding) remainingAt(now time.Duration) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.validUntil - now
}

// extendTo moves the end of the validity to until, if later, and tells
// the extender's expiry queue. It fails with the holding's end when it
// ended meanwhile.
func (h *holding) extendTo(until time.Time) error {
	later, err := h.moveEnd(onMonotonic(until))
	if later && h.l != nil {
		h.l.f.ext.moved(h)
	}
	return err
}

// moveEnd moves the end of the validity to u (on monotonic()), if later,
// and reports whether it did; the caller tells the expiry queue. It fails
// with the holding's end when it ended meanwhile.
func (h *holding) moveEnd(u time.Duration) (later bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cause != nil {
		return false, h.cause
	}
	later = u > h.validUntil
	if later {
		h.validUntil = u
	}
	return later, nil
}

// expired reports whether the validity has run out; the expiry asks
// before ending the holding, since an extension may have moved it.
func (h *holding) expired() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return monotonic() >= h.validUntil
}

// held is what a primitive knows of its holdings: the current or most
// recent one, and whether an Acquire is under way, since a primitive is
// one holder. It is embedded in every Lock, so it stays small.
type held struct {
	mu        sync.Mutex
	acquiring bool
	cur       *holding // nil before the first holding
}

// holding returns the current or most recent holding.
func (s *held) holding() *holding {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// start makes h the current holding.
func (s *held) start(h *holding) {
	s.mu.Lock()
	s.cur = h
	s.mu.Unlock()
}

// token, done and err are those of the current or most recent holding;
// before the first, "", a closed channel and nil.
func (s *held) token() string {
	if h := s.holding(); h != nil {
		return h.token()
	}
	return ""
}

func (s *held) done() <-chan struct{} {
	if h := s.holding(); h != nil {
		return h.Done()
	}
	return closedChan
}

func (s *held) err() error {
	if h := s.holding(); h != nil {
		return h.Err()
	}
	return nil
}

// enter begins an Acquire of the primitive (its kind and name): it fails
// while another is under way or the current holding lives. leave ends it.
func (s *held) enter(kind, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.acquiring:
		return invalidOp("%s %q: an Acquire is already in progress", kind, name)
	case s.cur != nil && s.cur.live() && kind == "lock":
		return invalidOp("lock %q is already held; use RLock to nest", name)
	case s.cur != nil && s.cur.live():
		return invalidOp("%s %q is already held", kind, name)
	}
	s.acquiring = true
	return nil
}

func (s *held) leave() {
	s.mu.Lock()
	s.acquiring = false
	s.mu.Unlock()
}

// liveFor returns h when it is live, or why op of the primitive (its kind
// and name) cannot run: ErrClosed before the first holding once the
// factory closes, the holding's end after a loss, and an
// ErrInvalidOperation otherwise.
func liveFor(h *holding, op, kind, name string, closing bool) (*holding, error) {
	switch {
	case h == nil && closing:
		return nil, ErrClosed
	case h == nil:
		return nil, invalidOp("%s of %s %q before Acquire", op, kind, name)
	case h.Err() != nil:
		return nil, h.Err()
	case !h.live():
		return nil, invalidOp("%s of %s %q after Release", op, kind, name)
	}
	return h, nil
}
