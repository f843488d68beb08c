package redlock

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// keySet is what one round of a holding covers: the key of a Lock, the
// names of a MultiLock under one token, or at Close a batch of held locks,
// a token each. Every primitive's attempts, discards, releases and
// extensions run here, and it is the one place that knows how the
// transport orders commands (fanout.fifo, fanout.starts).
type keySet struct {
	locks []*Lock   // one per key; locks[0] leads: its configuration and round
	obs   *observer // the primitive's; nil: nobody listens
}

// lockKeys is the key set of one lock.
func lockKeys(l *Lock) keySet { return keySet{locks: []*Lock{l}, obs: l.obs} }

// name is the primitive's name, for messages and the observer. (A field
// of its own would make every key set's slice escape to the heap: escape
// analysis does not tell a struct's fields apart.)
func (ks keySet) name() string {
	switch {
	case len(ks.locks) == 1:
		return ks.locks[0].name
	case ks.obs != nil:
		return ks.obs.lock
	}
	names := make([]string, len(ks.locks))
	for i, l := range ks.locks {
		names[i] = l.name
	}
	return strings.Join(names, ",")
}

func (ks keySet) lead() *Lock { return ks.locks[0] }

// keys are the key names as command arguments.
func (ks keySet) keys() []any {
	keys := make([]any, len(ks.locks))
	for i, l := range ks.locks {
		keys[i] = l.nameArg
	}
	return keys
}

// deleteCmd deletes every key that still holds its token (tokens[i] for
// key i) and announces the release; see command.deletes.
func (ks keySet) deleteCmd(tokens ...any) *command {
	var cmd *command
	if len(ks.locks) == 1 {
		cmd = releaseScript.cmd(judgeOne, ks.keys(), tokens...)
	} else {
		cmd = releaseManyScript.cmd(judgeList(len(ks.locks)), ks.keys(), tokens...)
	}
	return cmd.mustDelete(ks.lead().cfg.ttl)
}

// yes reports whether node reply rep did what was asked for key i.
func (ks keySet) yes(rep *reply, i int) bool {
	if len(ks.locks) == 1 {
		return rep.ok
	}
	return rep.raw.([]int64)[i] == 1
}

// keyTally is round r's count for key i alone.
func (ks keySet) keyTally(r *round, i int) round {
	if r == nil {
		return round{}
	}
	if len(ks.locks) == 1 {
		return round{oks: r.oks, noes: r.noes, errs: r.errs}
	}
	t := round{errs: r.errs}
	r.each(func(_ *node, rep *reply) {
		switch {
		case rep.err != nil:
		case ks.yes(rep, i):
			t.oks++
		default:
			t.noes++
		}
	})
	return t
}

// won is an attempt that took a quorum in time.
type won struct {
	until   time.Duration // the end of the validity, on monotonic()
	counted uint64        // the nodes whose yes was counted
	fin     *finish       // transports that are not FIFO: the attempt's calls
}

// attempt sends cmd, an attempt with token, to every node and decides it
// at quorum; commit, when set, runs on a round that won (a fenced lock
// mints its token) and returns the validity left. A failed attempt is
// discarded.
func (ks keySet) attempt(ctx context.Context, cmd *command, token any, commit func(round, time.Duration) (time.Duration, error)) (won, tally, error) {
	l := ks.lead()
	// The SETs outlive a cancelled ctx (bounded by the node timeout), so a
	// cancelled attempt learns what each node did and can clean up after it.
	r := l.fan.run(ctx, cmd.attempt(), false)
	defer r.free()
	t := tallyOf(&r)
	validity := l.cfg.validity(&r)
	var err error
	if r.reached(l.cfg.quorum) && validity > 0 && commit != nil {
		validity, err = commit(r, validity) // a copy: &r given to a func value would move r to the heap
	}
	if r.reached(l.cfg.quorum) && validity > 0 {
		return won{until: onMonotonic(l.cfg.validUntil(r.start)), counted: r.got, fin: r.fin}, t, nil
	}
	ks.discard(token, &r)
	switch {
	case err != nil:
	case r.reached(l.cfg.quorum):
		err = fmt.Errorf("validity %v after %v is not positive", validity, r.elapsed())
	default:
		err = r.detail("set", len(l.fan.nodes), l.cfg.quorum)
	}
	return won{}, t, err
}

// discard deletes a failed or abandoned attempt's keys on every node that
// did not refuse it, without waiting. On a FIFO transport the delete is
// sent now, behind the attempt's own call on the same connection;
// otherwise the node's cleaner sends it once the attempt's call on that
// node is done. A factory whose rounds are ordered (fanout.starts) also
// sends it now as a round, in the same order as the others on every node
// (batchTransport says why).
func (ks keySet) discard(token any, r *round) {
	fan := &ks.lead().fan
	tokens := ks.same(token)
	if fan.fifo {
		ks.sendDelete(tokens)
		return
	}
	ordered := fan.starts != nil
	for i, n := range fan.nodes {
		switch {
		case r.refused(i):
		case r.got&(1<<i) != 0: // its call is done: no need to wait for the slower nodes'
			if failed := r.slots[i].err != nil; !ordered || failed {
				ks.toCleaner(n, tokens, failed, nil)
			}
		default:
			ks.toCleaner(n, tokens, true, r.fin)
		}
	}
	if ordered {
		ks.sendDelete(tokens)
	}
}

// same is token once per key.
func (ks keySet) same(token any) []any {
	tokens := make([]any, len(ks.locks))
	for i := range tokens {
		tokens[i] = token
	}
	return tokens
}

// toCleaner queues the deletes of every key on node n, behind the round
// fin when set; see cleaner.addBehind.
func (ks keySet) toCleaner(n *node, tokens []any, uncertain bool, fin *finish, after ...<-chan struct{}) {
	for i, l := range ks.locks {
		n.cleaner.addBehind(l.discardOf(tokens[i].(string)), uncertain, fin, after...)
	}
}

// sendDelete sends the deletes to every node as one round, without
// waiting. Refusing nodes get it too: it compares tokens, and one round is
// cheaper than picking nodes.
func (ks keySet) sendDelete(tokens []any) {
	r := ks.lead().fan.send(context.Background(), ks.deleteCmd(tokens...)) // nobody waits: the replies land in the round's buffer
	r.free()
}

// release deletes the keys of the holdings hs (hs[i] of key i) on every
// node over fan, deciding at quorum, and wakes the local waiters of each
// key. The caller reads the outcome per key with keyTally, then frees the
// round. On a FIFO transport the waiters are woken as soon as the deletes
// are sent: a waiter's SET, sent after them on the same connections,
// reaches every node after its delete, so the handoff saves the release's
// round trip; otherwise once a quorum released the key. A node whose
// attempt reply was never counted may still get the attempt after the
// delete on such a transport: its cleaner deletes once more behind it.
func (ks keySet) release(ctx context.Context, fan *fanout, hs []*holding) round {
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	tokens := make([]any, len(hs))
	for i, h := range hs {
		tokens[i] = h.arg
	}
	r := fan.send(ctx, ks.deleteCmd(tokens...))
	if fan.fifo {
		ks.announce(hs, nil)
	} else {
		for i, h := range hs {
			// Behind both the late attempt and this delete, so that it
			// never races the delete that the release counts.
			d := ks.locks[i].discardOf(h.token())
			for j, n := range fan.nodes {
				if h.counted&(1<<j) == 0 {
					n.cleaner.addBehind(d, true, h.fin, r.fin.done)
				}
			}
		}
	}
	// One node's reply decides for every key only when there is one key;
	// for several, a node that never had one of them says 0 for it, and
	// the others must be heard.
	fan.wait(ctx, &r, len(hs) > 1)
	if !fan.fifo {
		ks.announce(hs, &r)
	}
	return r
}

// releaseHeld finishes the Release of holding set (parts[i] of key i),
// which the caller has ended: it stops the parts' extensions, deletes the
// keys and tells the observer. It succeeds iff a quorum released every key;
// see Lock.Release.
func (ks keySet) releaseHeld(ctx context.Context, set *holding, parts []*holding) error {
	if ob := ks.obs; ob != nil && ob.ReleaseStart != nil {
		ctx = ob.ReleaseStart(ctx, ks.name())
	}
	for i, k := range ks.locks {
		k.endHolding(parts[i], errReleased) // a Lock's own holding has ended already
		k.f.ext.unschedule(parts[i], true)
	}
	l := ks.lead()
	r := ks.release(ctx, &l.fan, parts)
	var err error
	for i, k := range ks.locks {
		if t := ks.keyTally(&r, i); !t.reached(k.cfg.quorum) && err == nil {
			err = t.failure("released", len(l.fan.nodes), k.cfg.quorum)
		}
	}
	r.free()
	ks.obs.released(ctx, set, false, err)
	return err
}

// announce tells the factory's local waiters of each key that its holding
// was released: every one, or, given the release round r, those that a
// quorum released.
func (ks keySet) announce(hs []*holding, r *round) {
	w := ks.lead().f.wake
	if w == nil {
		return
	}
	for i, h := range hs {
		if t := ks.keyTally(r, i); r == nil || t.reached(ks.locks[i].cfg.quorum) {
			w.released(ks.locks[i].name, h.token())
		}
	}
}

// extendCmd resets the TTL of every key holding token.
func (ks keySet) extendCmd(token any) *command {
	l := ks.lead()
	if len(ks.locks) == 1 {
		return extendScript.cmd(judgeOne, ks.keys(), token, l.ttlArg).asVote(l.vote)
	}
	cmd := extendManyCmd(nil, judgeAllFlags(len(ks.locks)), len(ks.locks), func(i int) (any, any, any) {
		return ks.locks[i].nameArg, token, ks.locks[i].ttlArg
	})
	return cmd.asVote(l.vote)
}

// extend resets the TTL of every key of holding set (parts[i] for key i)
// in one round, a node counting only if it extended every key, and returns
// the new validity left at its return (validityLeft says why); when a
// quorum refuses, every part is lost.
func (ks keySet) extend(ctx context.Context, set *holding, parts []*holding) (time.Duration, error) {
	l := ks.lead()
	r := l.fan.run(ctx, ks.extendCmd(set.arg), false)
	r.free()
	validity := l.cfg.validity(&r)
	if !r.reached(l.cfg.quorum) || validity <= 0 {
		err := r.failure("extend", len(l.fan.nodes), l.cfg.quorum)
		if r.refusedByQuorum(len(l.fan.nodes), l.cfg.quorum) {
			for i, k := range ks.locks {
				k.lose(parts[i], LossExtendRefused, err)
			}
		}
		ks.obs.extended(ks.name(), false, err)
		return 0, err
	}
	until := l.cfg.validUntil(r.start)
	for _, h := range parts {
		if err := h.extendTo(until); err != nil {
			if err == errReleased {
				return 0, invalidOp("%q was released during Extend", ks.name())
			}
			return 0, err
		}
	}
	ks.obs.extended(ks.name(), false, nil)
	return validityLeft(onMonotonic(until)), nil
}
