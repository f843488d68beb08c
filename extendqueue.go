package redlock

// extendQueue is the autoextension schedule: the extending holdings not in
// a batch in flight, in a min-heap by when their next extension is due
// (holding.at), each knowing its place (holding.qpos). The extender takes
// the due ones off the top, so that a wake costs what it extends rather
// than a look at every held lock: with a million held locks, a scan of
// all of them at every wake was most of the client's CPU (BENCHMARKS.md,
// "Performance, round 3"). It lives under the extender's mu.
type extendQueue []*holding

// place puts h into the queue, or moves it after its h.at changed.
func (q *extendQueue) place(h *holding) {
	if h.qpos == 0 {
		*q = append(*q, h)
		h.qpos = int32(len(*q))
	}
	i := int(h.qpos) - 1
	q.up(i)
	q.down(i)
}

// remove takes h out of the queue, if it is in it.
func (q *extendQueue) remove(h *holding) {
	if h.qpos == 0 {
		return
	}
	i, last := int(h.qpos)-1, len(*q)-1
	if i != last {
		q.swap(i, last)
	}
	(*q)[last] = nil
	*q = (*q)[:last]
	h.qpos = 0
	if i != last {
		q.up(i)
		q.down(i)
	}
}

// first is the holding whose extension is due first, or nil.
func (q extendQueue) first() *holding {
	if len(q) == 0 {
		return nil
	}
	return q[0]
}

func (q extendQueue) swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].qpos, q[j].qpos = int32(i+1), int32(j+1)
}

func (q extendQueue) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if q[parent].at <= q[i].at {
			return
		}
		q.swap(i, parent)
		i = parent
	}
}

func (q extendQueue) down(i int) {
	for {
		least := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(q) && q[c].at < q[least].at {
				least = c
			}
		}
		if least == i {
			return
		}
		q.swap(i, least)
		i = least
	}
}
