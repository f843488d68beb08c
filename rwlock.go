package redlock

import (
	"context"
	"time"
)

// The keys of a read-write lock NAME on every node.
const (
	rwWriterSuffix  = ":rw:w"       // the writer's token (a Redlock key)
	rwIntentSuffix  = ":rw:i"       // the id of a writer waiting for readers to leave
	rwReadersSuffix = ":rw:readers" // the set of reader ids
	rwReaderInfix   = ":rw:r:"      // NAME:rw:r:ID is a reader's lease
)

// minWriterIntent bounds from below how long a waiting writer's intent
// keeps new readers out after its last attempt.
const minWriterIntent = time.Second

// ReadLock is one reader of a read-write lock: it shares the name with
// other readers and excludes writers.
//
// # Why readers and writers exclude each other
//
// On each node one script decides, atomically: a reader registers only if
// no writer holds the name there and no writer waits (lua/rw_read.lua); a
// writer takes the name only if no live reader and no writer is there
// (lua/rw_write.lua). Both need a quorum of nodes, and two quorums share a
// node; on that node whichever came second was refused, so a reader and a
// writer can never both hold while their validities last. Writers exclude
// each other as two Locks do.
//
// A reader's lease is a key of its own (NAME:rw:r:ID, one ID per
// ReadLock value: reuse a ReadLock rather than making one per read) holding
// its token with a TTL, listed in the set NAME:rw:readers, from which each
// writer attempt drops the ids whose lease is gone. It expires by the node's
// own clock (PX): no client's time enters a script, and a writer counts a
// reader live exactly while its key exists on that node. The lease is
// extended, released and cleaned up like a Lock key, so a ReadLock has
// every guarantee of a Lock: validity, autoextension (on by default), Done
// and Err on loss, no key left behind by a failed attempt.
//
// # No writer starvation
//
// A writer that finds live readers on a node records its intent there
// (NAME:rw:i, refreshed by each of its attempts and expiring soon after
// the last; withdrawn when the writer gives up), and a reader never
// registers where a writer's intent is: the readers already in finish, no
// new one comes in, and the writer gets in.
//
// # Plain locks
//
// A ReadLock or WriteLock of NAME does not exclude a plain Lock of NAME:
// their keys differ (NAME:rw:…), because a plain Lock's SET does not look
// for readers and so could not take part in the exclusion anyway. Use one
// kind of lock per name.
//
// A blocked reader sleeps until a writer's release or withdrawal is
// announced (pub/sub), with the retry delay as backstop. A ReadLock is one holder, reusable
// after Release; its methods are safe for concurrent use.
type ReadLock struct {
	name  string
	l     *Lock   // the reader's lease
	watch []*Lock // the writer and intent keys, whose releases wake a blocked reader
	left  []any   // PUBLISH of a reader's departure, on the channel writers follow
}

// WriteLock is the writer of a read-write lock: it excludes readers and
// writers of its name; see ReadLock for why. A blocked writer sleeps until
// another writer's release or a reader's Release is announced (pub/sub),
// with the retry delay as backstop (a reader whose lease expires announces
// nothing).
type WriteLock struct {
	name  string
	l     *Lock   // the writer key
	watch []*Lock // the writer key and the readers' departures, which wake a blocked writer
	// intentKey and id name this writer's intent, which it withdraws when
	// it gives up.
	intentKey []any
	id        string
}

// NewReadLock returns a reader of the read-write lock name, with the
// factory's defaults overridden by opts; it autoextends by default. An
// empty name, an invalid option or WithFencing(true) is an
// ErrInvalidArgument returned by every call.
func (f *Factory) NewReadLock(name string, opts ...Option) *ReadLock {
	id := newToken()
	l := f.newLock(name+rwReaderInfix+id, opts, true)
	l.initErr = rwCheck(l, name)
	keys := []any{l.name, name + rwWriterSuffix, name + rwIntentSuffix, name + rwReadersSuffix}
	l.extra().setCmd = func(token any) *command {
		return rwReadScript.cmd(judgeOne, keys, token, l.ttlArg, id).asVote(l.vote)
	}
	watch := []*Lock{f.newLock(name+rwWriterSuffix, opts, true), f.newLock(name+rwIntentSuffix, opts, true)}
	return &ReadLock{name: name, l: l, watch: watch, left: []any{releaseChannelPrefix + name + rwReadersSuffix, id}}
}

// NewWriteLock returns the writer of the read-write lock name, with the
// factory's defaults overridden by opts; it autoextends by default. An
// empty name, an invalid option or WithFencing(true) is an
// ErrInvalidArgument returned by every call.
func (f *Factory) NewWriteLock(name string, opts ...Option) *WriteLock {
	id := newToken()
	l := f.newLock(name+rwWriterSuffix, opts, true)
	l.initErr = rwCheck(l, name)
	intent := max(4*l.cfg.retryDelay+l.cfg.nodeTimeout, minWriterIntent)
	keys := []any{l.name, name + rwIntentSuffix, name + rwReadersSuffix}
	l.extra().setCmd = func(token any) *command {
		return rwWriteScript.cmd(judgeOne, keys, token, l.ttlArg, id, intent.Milliseconds(), name+rwReaderInfix).asVote(l.vote)
	}
	readers := f.newLock(name+rwReadersSuffix, opts, true) // only watched
	return &WriteLock{name: name, l: l, watch: []*Lock{l, readers}, intentKey: []any{name + rwIntentSuffix}, id: id}
}

// rwCheck is the construction error of a reader's or writer's lock l.
// Fencing tokens are minted by the plain acquire, which these locks
// replace with their scripts, so WithFencing(true) is refused.
func rwCheck(l *Lock, name string) error {
	switch {
	case l.initErr != nil:
		return l.initErr
	case name == "":
		return invalidArg("read-write lock name is empty")
	case l.cfg.fencing:
		return invalidArg("read-write lock %q: WithFencing is not supported", name)
	}
	return nil
}

// Name returns the read-write lock's name.
func (r *ReadLock) Name() string { return r.name }

// Acquire blocks until this reader is registered on a quorum or ctx ends;
// it returns the validity. Errors are those of Lock.Acquire.
func (r *ReadLock) Acquire(ctx context.Context) (time.Duration, error) {
	return acquire(ctx, rwContender{r.l, r.watch}, r.name, 0)
}

// TryAcquire makes at most RetryTimes+1 attempts.
func (r *ReadLock) TryAcquire(ctx context.Context) (time.Duration, error) {
	return acquire(ctx, rwContender{r.l, r.watch}, r.name, r.l.cfg.retryTimes+1)
}

// Name returns the read-write lock's name.
func (w *WriteLock) Name() string { return w.name }

// Acquire blocks until this writer holds the name on a quorum or ctx
// ends; it returns the validity. Errors are those of Lock.Acquire.
func (w *WriteLock) Acquire(ctx context.Context) (time.Duration, error) {
	return w.acquire(ctx, 0)
}

// TryAcquire makes at most RetryTimes+1 attempts.
func (w *WriteLock) TryAcquire(ctx context.Context) (time.Duration, error) {
	return w.acquire(ctx, w.l.cfg.retryTimes+1)
}

// acquire acquires the writer key. A writer that gives up withdraws its
// intent at once, so that readers need not wait for it to expire; the
// delete publishes on the intent key's channel, which blocked readers
// follow.
func (w *WriteLock) acquire(ctx context.Context, maxAttempts int) (time.Duration, error) {
	v, err := acquire(ctx, rwContender{w.l, w.watch}, w.name, maxAttempts)
	if err != nil && w.l.initErr == nil {
		r := w.l.fan.send(context.Background(), releaseScript.cmd(judgeOne, w.intentKey, w.id))
		r.free()
	}
	return v, err
}

// Token returns the token of the current or most recent holding.
func (r *ReadLock) Token() string { return r.l.Token() }

// Extend extends the reader's lease; see Lock.Extend.
func (r *ReadLock) Extend(ctx context.Context) (time.Duration, error) { return r.l.Extend(ctx) }

// Release ends the reader's lease (see Lock.Release) and announces the
// departure to blocked writers on every node, without waiting for it.
func (r *ReadLock) Release(ctx context.Context) error {
	err := r.l.Release(ctx)
	if r.l.initErr == nil && !r.l.f.o.closing() {
		p := r.l.fan.send(context.Background(), plainCmd(judgeAny, "PUBLISH", r.left...))
		p.free()
	}
	return err
}

// Done is closed when the reader's holding ends; see Lock.Done.
func (r *ReadLock) Done() <-chan struct{} { return r.l.Done() }

// Err reports why the reader's holding ended; see Lock.Err.
func (r *ReadLock) Err() error { return r.l.Err() }

// Token returns the token of the current or most recent holding.
func (w *WriteLock) Token() string { return w.l.Token() }

// Extend extends the writer's key; see Lock.Extend.
func (w *WriteLock) Extend(ctx context.Context) (time.Duration, error) { return w.l.Extend(ctx) }

// Release releases the writer's key and wakes waiting readers and writers;
// see Lock.Release.
func (w *WriteLock) Release(ctx context.Context) error { return w.l.Release(ctx) }

// Done is closed when the writer's holding ends; see Lock.Done.
func (w *WriteLock) Done() <-chan struct{} { return w.l.Done() }

// Err reports why the writer's holding ended; see Lock.Err.
func (w *WriteLock) Err() error { return w.l.Err() }

// rwContender is a reader's or writer's lock as a contender (acquire.go):
// its attempt is the lock's, with its script, but a blocked one sleeps
// until the release of one of watch is announced. It never asks the
// nodes how long its own key has left, which says nothing about the
// others: a writer's key about readers, a reader's lease about writers.
type rwContender struct {
	l     *Lock
	watch []*Lock
}

func (c rwContender) lead() *Lock                                           { return c.l }
func (c rwContender) enter() error                                          { return c.l.enter() }
func (c rwContender) leave()                                                { c.l.leave() }
func (c rwContender) waitFor() []*Lock                                      { return c.watch }
func (c rwContender) keyTTL() bool                                          { return false }
func (c rwContender) try(ctx context.Context) (time.Duration, tally, error) { return c.l.try(ctx) }
