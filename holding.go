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
	token   string
	arg     any             // token, boxed once for every command that carries it
	counted uint64          // the nodes whose SET was counted in the attempt
	fin     <-chan struct{} // pool transports: the attempt's calls are done
	fence   int64           // the fencing token; 0 when not fenced (fence.go)

	mu         sync.Mutex
	cause      error         // nil while live
	done       chan struct{} // made on demand: most holders never ask
	onEnd      []func(cause error)
	validUntil time.Time   // monotonic end of the current validity
	expiry     *time.Timer // fires at validUntil unless extended
}

// closedDone is what Done returns for a holding that never started.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Done returns a channel closed when the holding ends.
func (h *holding) Done() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done == nil {
		if h.cause != nil {
			return closedDone
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
	if h.expiry != nil {
		h.expiry.Stop()
	}
	if h.done != nil {
		close(h.done)
	}
	fns := h.onEnd
	h.onEnd = nil
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
	h.onEnd = append(h.onEnd, fn)
	i := len(h.onEnd) - 1
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if i < len(h.onEnd) {
			h.onEnd[i] = func(error) {}
		}
	}
}

// remaining is how long the validity lasts from now.
func (h *holding) remaining() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return time.Until(h.validUntil)
}

// extendTo moves the end of the validity to until, if later. It fails with
// the holding's end when it ended meanwhile.
func (h *holding) extendTo(until time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cause != nil {
		return h.cause
	}
	if until.After(h.validUntil) {
		h.validUntil = until
		h.expiry.Reset(time.Until(until))
	}
	return nil
}

// expired reports whether the validity has run out; the expiry timer asks
// before ending the holding, since an extension may have re-armed it.
func (h *holding) expired() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !time.Now().Before(h.validUntil)
}
