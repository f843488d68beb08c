package sdlstore

// ring is a first-in first-out queue of events in a circular buffer that
// grows by doubling up to a limit, so a large bound costs memory only when
// a backlog really builds up, and a queue that never empties does not grow.
type ring struct {
	buf  []event
	head int // index of the oldest event
	n    int // events held
}

func (r *ring) len() int { return r.n }

// push appends e; the caller checks that fewer than limit events are held.
func (r *ring) push(e event, limit int) {
	if r.n == len(r.buf) {
		r.grow(limit)
	}
	r.buf[(r.head+r.n)%len(r.buf)] = e
	r.n++
}

// grow doubles the buffer, to at most limit (and at least 16) slots.
func (r *ring) grow(limit int) {
	size := min(max(2*len(r.buf), 16), limit)
	buf := make([]event, size)
	for i := range r.n {
		buf[i] = r.buf[(r.head+i)%len(r.buf)]
	}
	r.buf, r.head = buf, 0
}

// pop removes and returns the oldest event.
func (r *ring) pop() (event, bool) {
	if r.n == 0 {
		return event{}, false
	}
	e := r.buf[r.head]
	r.buf[r.head] = event{} // let the event's memory go
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return e, true
}
