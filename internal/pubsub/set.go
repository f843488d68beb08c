package pubsub

// channel is what the Subscriber knows of one channel.
type channel struct {
	wanted  bool // in the set the owner asked for
	onConn  bool // the last command written for it on the current connection was SUBSCRIBE
	pending int  // replies still due to the (UN)SUBSCRIBEs written for it on the current connection
}

// confirmed reports whether the server has the channel subscribed and no
// command for it is still on its way.
func (c *channel) confirmed() bool { return c.wanted && c.onConn && c.pending == 0 }

// idle reports whether nothing needs the entry any more.
func (c *channel) idle() bool { return !c.wanted && !c.onConn && c.pending == 0 }

// waiter is a WaitConfirmed call.
type waiter struct {
	need map[string]struct{}
	done chan error // buffered; receives exactly once
}

// set is the channels of a Subscriber and the state of the current
// connection. The Subscriber's mutex guards it; its methods do no I/O.
type set struct {
	chans   map[string]*channel
	dirty   map[string]struct{} // channels the writer has to look at
	pingDue bool
	waiters map[*waiter]struct{}
}

func newSet() set {
	return set{chans: map[string]*channel{}, dirty: map[string]struct{}{}, waiters: map[*waiter]struct{}{}}
}

// add puts names in the set; it reports whether the writer has work.
func (t *set) add(names []string) bool {
	changed := false
	for _, n := range names {
		c := t.chans[n]
		if c == nil {
			c = &channel{}
			t.chans[n] = c
		}
		if !c.wanted {
			c.wanted = true
			t.dirty[n] = struct{}{}
			changed = true
		}
	}
	return changed
}

// remove takes names out of the set, failing the waiters that need one of
// them; it reports whether the writer has work.
func (t *set) remove(names []string) bool {
	changed := false
	for _, n := range names {
		c := t.chans[n]
		if c == nil || !c.wanted {
			continue
		}
		c.wanted = false
		t.failNeeding(n, ErrNotSubscribed)
		if c.idle() {
			delete(t.chans, n)
			continue
		}
		t.dirty[n] = struct{}{}
		changed = true
	}
	return changed
}

// take returns the commands that bring the connection in line with the
// set, and marks them written: at most one per channel, so the last state
// asked for is the one sent.
func (t *set) take() (subs, unsubs []any, ping bool) {
	for n := range t.dirty {
		c := t.chans[n]
		switch {
		case c == nil:
		case c.wanted && !c.onConn:
			subs = append(subs, n)
			c.onConn = true
			c.pending++
		case !c.wanted && c.onConn:
			unsubs = append(unsubs, n)
			c.onConn = false
			c.pending++
		case c.idle():
			delete(t.chans, n)
		}
	}
	clear(t.dirty)
	ping, t.pingDue = t.pingDue, false
	return subs, unsubs, ping
}

// reset forgets the connection's state: nothing is subscribed on the next
// one yet, so every wanted channel is dirty.
func (t *set) reset(ping bool) {
	clear(t.dirty)
	for n, c := range t.chans {
		if !c.wanted {
			delete(t.chans, n)
			continue
		}
		c.onConn, c.pending = false, 0
		t.dirty[n] = struct{}{}
	}
	t.pingDue = ping
}

// reply records the server's answer to one command for name; it reports
// whether name is now confirmed.
func (t *set) reply(name string) bool {
	c := t.chans[name]
	if c == nil || c.pending == 0 {
		return false
	}
	c.pending--
	if c.idle() {
		delete(t.chans, name)
		return false
	}
	if !c.confirmed() {
		return false
	}
	for w := range t.waiters {
		delete(w.need, name)
		if len(w.need) == 0 {
			t.finish(w, nil)
		}
	}
	return true
}

// delivers reports whether messages of name go to the owner.
func (t *set) delivers(name string) bool {
	c := t.chans[name]
	return c != nil && c.wanted
}

// wait returns a waiter for those of names not yet confirmed, nil when all
// are, or ErrNotSubscribed when one is not in the set.
func (t *set) wait(names []string) (*waiter, error) {
	w := &waiter{need: map[string]struct{}{}, done: make(chan error, 1)}
	for _, n := range names {
		c := t.chans[n]
		if c == nil || !c.wanted {
			return nil, ErrNotSubscribed
		}
		if !c.confirmed() {
			w.need[n] = struct{}{}
		}
	}
	if len(w.need) == 0 {
		return nil, nil
	}
	t.waiters[w] = struct{}{}
	return w, nil
}

// finish ends a waiter with err.
func (t *set) finish(w *waiter, err error) {
	delete(t.waiters, w)
	w.done <- err
}

// failAll ends every waiter with err.
func (t *set) failAll(err error) {
	for w := range t.waiters {
		t.finish(w, err)
	}
}

// failNeeding ends the waiters that need name with err.
func (t *set) failNeeding(name string, err error) {
	for w := range t.waiters {
		if _, ok := w.need[name]; ok {
			t.finish(w, err)
		}
	}
}
