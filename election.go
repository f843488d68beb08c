package redlock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
)

// observeCheck is how often an Observe re-reads the leader when no change
// was announced: the backstop for an announcement that was lost (a leader
// that crashed or lost its lock publishes nothing).
const observeCheck = time.Second

// leaderValueSep separates the random part of a leader's token from its
// value.
const leaderValueSep = "|"

// leaderChannelSuffix names the pseudo-lock whose release channel carries
// the announcements of an election's changes: a new leader and a
// resignation publish on "redlock:released:NAME#leader", which the
// factory's waker already follows for its observers.
const leaderChannelSuffix = "#leader"

// Election elects at most one leader of a name among its campaigners. A
// leader holds a Lock of the name whose token carries its value (the key
// stores "RANDOM|VALUE"), so anyone can read who leads with Leader, and
// Observe follows the changes.
//
// At most one campaigner believes it leads at any moment, counted by
// validity intervals: leading is holding the Lock, whose intervals
// Redlock keeps disjoint (see docs/SAFETY.md). Leadership is autoextended
// until Resign; when it cannot be extended on a quorum, or its validity
// runs out, Done is closed and Err returns ErrLockLost: a leader must stop
// acting as one at once. A crashed leader's lock frees after the TTL, so
// the TTL bounds the time without a leader (use WithTTL).
//
// An Election is a Locker too: Acquire and TryAcquire campaign, Extend
// extends the leadership, Release resigns, and Token is the leader lock's
// token, so code written for any Locker can hold a leadership.
//
// The election's name must not be used by a plain Lock: a Lock holding it
// would read as a leader whose value is its token.
type Election struct {
	name string
	l    *Lock
	f    *Factory

	mu          sync.Mutex
	campaigning bool
	value       string // the last Campaign's value; "" before the first
}

// NewElection returns an election of name over the factory's nodes, with
// the factory's defaults overridden by opts. An empty name or an invalid
// option is an ErrInvalidArgument returned by every call.
func (f *Factory) NewElection(name string, opts ...Option) *Election {
	return &Election{name: name, l: f.newLock(name, opts, true), f: f}
}

// Name returns the election's name, which is also its key.
func (e *Election) Name() string { return e.name }

// Campaign blocks until this campaigner leads with value, or ctx ends (an
// error matching ErrNotAcquired and ctx.Err()). An empty value is an
// ErrInvalidArgument; a Campaign while leading or campaigning is an
// ErrInvalidOperation. Observers are told of the new leader at once. The
// value is kept for later Acquire and TryAcquire calls.
func (e *Election) Campaign(ctx context.Context, value string) error {
	if e.l.initErr != nil {
		return e.l.initErr
	}
	if value == "" {
		return invalidArg("election %q: empty value", e.name)
	}
	_, err := e.campaign(ctx, value, 0)
	return err
}

// Acquire campaigns as Campaign does, with the value of the last Campaign
// call, or with a fresh random value at each call when Campaign was never
// called (Value returns it once leading). It returns the leadership's
// validity; errors are those of Campaign.
func (e *Election) Acquire(ctx context.Context) (time.Duration, error) {
	return e.campaign(ctx, "", 0)
}

// TryAcquire campaigns as Acquire does, but makes at most RetryTimes+1
// attempts, as Lock.TryAcquire: while another campaigner leads, it
// returns an error matching ErrNotAcquired.
func (e *Election) TryAcquire(ctx context.Context) (time.Duration, error) {
	return e.campaign(ctx, "", e.l.cfg.retryTimes+1)
}

// campaign acquires the leader lock with value (the last Campaign's, or a
// random one, when empty) in its token, making at most maxAttempts
// attempts (0: until ctx ends), and announces the new leader.
func (e *Election) campaign(ctx context.Context, value string, maxAttempts int) (time.Duration, error) {
	if e.l.initErr != nil {
		return 0, e.l.initErr
	}
	e.mu.Lock()
	if e.campaigning {
		e.mu.Unlock()
		return 0, invalidOp("election %q: a Campaign is already in progress", e.name)
	}
	if h := e.l.holding(); h != nil && h.live() {
		e.mu.Unlock()
		return 0, invalidOp("election %q: already leading", e.name)
	}
	switch {
	case value != "":
		e.value = value
	case e.value != "":
		value = e.value
	default:
		value = newToken()
	}
	e.campaigning = true
	e.l.extra().suffix = leaderValueSep + value
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.campaigning = false
		e.mu.Unlock()
	}()
	until, err := acquireUntil(ctx, e.l, e.name, maxAttempts)
	if err != nil {
		return 0, err
	}
	e.announce()
	return validityLeft(until), nil
}

// announce publishes a change of leader on every node, for observers;
// nobody waits for the replies, which land in the round's buffer.
func (e *Election) announce() {
	pub := plainCmd(judgeAny, "PUBLISH", releaseChannelPrefix+e.name+leaderChannelSuffix, newToken())
	r := e.l.fan.send(context.Background(), pub)
	r.free()
}

// Resign gives up leadership, if held, and tells observers; see
// Lock.Release for the outcome. Resigning when not leading is an
// ErrInvalidOperation.
func (e *Election) Resign(ctx context.Context) error {
	if e.l.initErr != nil {
		return e.l.initErr
	}
	if e.l.holding() == nil {
		if e.f.o.closing() {
			return ErrClosed
		}
		return invalidOp("Resign of election %q before Campaign", e.name)
	}
	err := e.l.Release(ctx)
	if !e.f.o.closing() {
		e.announce()
	}
	return err
}

// Release is Resign, for Locker.
func (e *Election) Release(ctx context.Context) error { return e.Resign(ctx) }

// Extend extends the leadership on the nodes and returns its new
// validity; errors are those of Lock.Extend (ErrLockLost ends the
// leadership, closing Done). Leadership is autoextended by default, so
// Extend is for elections made with WithAutoextend(false).
func (e *Election) Extend(ctx context.Context) (time.Duration, error) { return e.l.Extend(ctx) }

// Token returns the token of the current or most recent leadership, the
// string its key stores: a random part, "|", then the leader's value. It
// is "" before the first successful campaign.
func (e *Election) Token() string { return e.l.Token() }

// Value returns the value of the current or most recent leadership (what
// Leader returns while it lasts), or "" before the first successful
// campaign.
func (e *Election) Value() string {
	if t := e.l.Token(); t != "" {
		return leaderValue(t)
	}
	return ""
}

// Done returns a channel closed when this campaigner's leadership ends:
// Resign, a detected loss, or Factory.Close. Before the first successful
// campaign it is closed.
func (e *Election) Done() <-chan struct{} { return e.l.Done() }

// Err returns nil while leading or after Resign, an error matching
// ErrLockLost once leadership was lost, and ErrClosed after Factory.Close.
func (e *Election) Err() error { return e.l.Err() }

// Fence returns the fencing token of the current leadership with
// WithFencing(true): larger than that of every earlier leader of the name,
// so a resource can refuse a deposed leader's late writes. 0 when not
// leading or not fenced.
func (e *Election) Fence() int64 { return e.l.Fence() }

// Leader returns the value of the current leader: the value carried by
// the token that a quorum of nodes store under the name. It returns
// ErrNoLeader when no token has a quorum (nobody leads, or too few nodes
// answered to tell).
func (e *Election) Leader(ctx context.Context) (string, error) {
	if e.l.initErr != nil {
		return "", e.l.initErr
	}
	in, err := e.f.Inspect(ctx, e.name)
	if err != nil {
		return "", err
	}
	if !in.Held() {
		return "", ErrNoLeader
	}
	return leaderValue(in.Holder), nil
}

// leaderValue is the value carried by a leader's token; a token without
// one (a plain Lock of the name) is returned whole.
func leaderValue(token string) string {
	if _, v, ok := strings.Cut(token, leaderValueSep); ok {
		return v
	}
	return token
}

// Observe returns a channel that receives the leader's value now, then
// each time it changes; "" means nobody leads (or too few nodes answered
// to tell). Changes are announced through pub/sub by Campaign and Resign;
// a loss announces nothing, so the leader is also re-read every second
// as backstop. Within one Factory, observers of one name share each
// announcement (the first is woken, the others see the change at their
// next check). The channel is closed when ctx ends or the factory closes;
// a slow reader delays the observer but misses no final state.
func (e *Election) Observe(ctx context.Context) <-chan string {
	out := make(chan string, 1)
	if e.l.initErr != nil || !e.f.o.spawn(func() { e.observe(ctx, out) }) {
		close(out)
	}
	return out
}

// observe is Observe's goroutine.
func (e *Election) observe(ctx context.Context, out chan<- string) {
	defer close(out)
	var wake <-chan struct{}
	if w := e.f.wake; w != nil {
		wt, _, stop := w.watch(e.name + leaderChannelSuffix)
		defer stop()
		wake = wt.wake
	}
	t := time.NewTimer(observeCheck)
	defer t.Stop()
	last, first := "", true
	for {
		v, err := e.Leader(ctx)
		if ctx.Err() != nil || errors.Is(err, ErrClosed) {
			return
		}
		if v != last || first {
			select {
			case out <- v:
			case <-ctx.Done():
				return
			case <-e.f.o.dying:
				return
			}
			last, first = v, false
		}
		t.Reset(observeCheck)
		select {
		case <-wake:
		case <-t.C:
		case <-ctx.Done():
			return
		case <-e.f.o.dying:
			return
		}
	}
}
