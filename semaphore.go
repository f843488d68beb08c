package redlock

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// Semaphore is one holder of one of permits permits of a name: at most
// permits Semaphores of the name hold at once, across every process.
//
// # Why one Redlock per permit
//
// Counting holders per node and asking a quorum to agree is unsafe: with 2
// permits and 3 nodes, holders admitted by {n1,n2}, {n2,n3} and {n1,n3}
// each find at most 2 holders on every node, yet 3 hold at once. Instead a
// Semaphore of n permits is n independent Redlock slots, the keys
// NAME:permit:0 to NAME:permit:n-1, and a holder is the holder of one slot.
// Each slot is a Lock with all of its guarantees (quorum, drift, validity,
// autoextension, cleanup of failed attempts); two holders of one slot would
// be two holders of one Lock, which Redlock excludes, and there are only n
// slots, so at most n Semaphores hold at once.
//
// Semaphores of one name that disagree on permits stay safe in this sense:
// they use the slots 0 to permits-1, so at most the largest permits of them
// hold at once.
//
// # Acquiring
//
// An attempt is a pass over the slots, starting at a random one so that
// concurrent holders spread over the slots instead of all contending for
// slot 0, and stops at the first slot it wins. Uncontended, a pass costs
// one round like a Lock; when every permit is held, a pass costs permits
// rounds. Between passes a blocked Acquire sleeps until the release of any
// slot is announced on its pub/sub channel (as Lock's waiters do), with a
// random pause of up to the retry delay as backstop.
//
// A Semaphore is one holder: a second Acquire while held is an
// ErrInvalidOperation. It may be acquired again after Release. Its methods
// are safe for concurrent use.
type Semaphore struct {
	name    string
	permits int
	slots   []*Lock
	initErr error

	held       // cur is the current or most recent holding, of slot's key
	slot *Lock // under held.mu
}

// NewSemaphore returns a Semaphore of name with permits permits over the
// factory's nodes, with the factory's defaults overridden by opts (a
// Semaphore autoextends by default, like a Lock). permits < 1, an empty
// name, an invalid option or WithFencing(true) is an ErrInvalidArgument
// returned by every call.
func (f *Factory) NewSemaphore(name string, permits int, opts ...Option) *Semaphore {
	s := &Semaphore{name: name, permits: permits}
	switch {
	case name == "":
		s.initErr = invalidArg("semaphore name is empty")
	case permits < 1:
		s.initErr = invalidArg("semaphore %q: permits %d < 1", name, permits)
	}
	s.slots = make([]*Lock, max(permits, 1))
	for i := range s.slots {
		s.slots[i] = f.newLock(permitKey(name, i), opts, true)
		if s.initErr == nil {
			s.initErr = s.slots[i].initErr
		}
		if s.initErr == nil && s.slots[i].cfg.fencing {
			// Each slot would count its own tokens: no order across
			// the semaphore's holders.
			s.initErr = invalidArg("semaphore %q: WithFencing is not supported", name)
		}
	}
	return s
}

// permitKey is the key of slot i of semaphore name.
func permitKey(name string, i int) string { return name + ":permit:" + strconv.Itoa(i) }

// Name returns the semaphore's name; its slots are the keys NAME:permit:I.
func (s *Semaphore) Name() string { return s.name }

// Permits returns the number of permits.
func (s *Semaphore) Permits() int { return s.permits }

// Permit returns the slot of the current holding (0 to permits-1), or -1
// when not held.
func (s *Semaphore) Permit() int {
	if l := s.current(); l != nil && l.holding().live() {
		return slices.Index(s.slots, l)
	}
	return -1
}

// Token returns the token of the current or most recent holding, or ""
// before the first.
func (s *Semaphore) Token() string { return s.token() }

// Done returns a channel closed when the current holding ends (Release,
// loss, Factory.Close); before the first Acquire, a closed channel.
func (s *Semaphore) Done() <-chan struct{} { return s.done() }

// Err returns nil while held or after Release, an error matching
// ErrLockLost once the permit was lost, and ErrClosed after Factory.Close.
func (s *Semaphore) Err() error { return s.err() }

// current returns the slot of the current or most recent holding.
func (s *Semaphore) current() *Lock {
	s.held.mu.Lock()
	defer s.held.mu.Unlock()
	return s.slot
}

// Acquire blocks until a permit is held or ctx ends, and returns its
// validity; errors are those of Lock.Acquire.
func (s *Semaphore) Acquire(ctx context.Context) (time.Duration, error) {
	if s.initErr != nil {
		return 0, s.initErr
	}
	return acquire(ctx, s, s.name, 0)
}

// TryAcquire makes at most RetryTimes+1 passes over the slots and returns
// an error matching ErrNotAcquired when none won a permit.
func (s *Semaphore) TryAcquire(ctx context.Context) (time.Duration, error) {
	if s.initErr != nil {
		return 0, s.initErr
	}
	return acquire(ctx, s, s.name, s.slots[0].cfg.retryTimes+1)
}

// A Semaphore is a contender (acquire.go): an attempt is a pass over the
// slots, and the release of any slot may free it.
func (s *Semaphore) lead() *Lock      { return s.slots[0] }
func (s *Semaphore) waitFor() []*Lock { return s.slots }
func (s *Semaphore) keyTTL() bool     { return false }

// try attempts the slots once each, from a random one, and holds the
// first it wins.
func (s *Semaphore) try(ctx context.Context) (time.Duration, tally, error) {
	start := rand.N(s.permits)
	var lastErr error
	var last tally
	for k := range s.permits {
		l := s.slots[(start+k)%s.permits]
		until, t, err := l.try(ctx)
		if err == nil {
			s.held.mu.Lock()
			s.cur, s.slot = l.holding(), l
			s.held.mu.Unlock()
			return until, t, nil
		}
		lastErr, last = err, t
		if ctx.Err() != nil || err == errAcquireClosed {
			break
		}
	}
	return 0, last, lastErr
}

func (s *Semaphore) enter() error { return s.held.enter("semaphore", s.name) }

// Extend extends the held permit; see Lock.Extend.
func (s *Semaphore) Extend(ctx context.Context) (time.Duration, error) {
	if s.initErr != nil {
		return 0, s.initErr
	}
	l := s.current()
	if l == nil {
		return 0, invalidOp("Extend of semaphore %q before Acquire", s.name)
	}
	return l.Extend(ctx)
}

// Release gives the permit back and wakes a waiter of it; see Lock.Release
// for the outcome and errors.
func (s *Semaphore) Release(ctx context.Context) error {
	if s.initErr != nil {
		return s.initErr
	}
	l := s.current()
	if l == nil {
		if s.slots[0].f.o.closing() {
			return ErrClosed
		}
		return invalidOp("Release of semaphore %q before Acquire", s.name)
	}
	return l.Release(ctx)
}
