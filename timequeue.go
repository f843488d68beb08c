package redlock

import "time"

// queueSlot is the width of a timeQueue's buckets. Any width works, since
// the users look at each holding's own time; this one keeps a bucket's
// holdings few enough to look through and the buckets few enough to
// order: a lock of a 30 s TTL is due every 22 s, which 2,800 buckets
// cover.
const queueSlot = 8 * time.Millisecond

// timeQueue keeps holdings by a time of theirs (key): bucket s holds those
// whose time is in [s*queueSlot, (s+1)*queueSlot), and order is a
// min-heap of the buckets' numbers. A holding knows its place in its
// bucket (pos); its bucket is its time's, so a holding's time must not
// change while it is queued: take it out, change it, put it back. Every
// operation is constant work, and the earliest holdings are a bucket
// away. Min-heaps of the holdings cost a cache miss at each of 20 levels
// at a million held locks, and a scan of every held lock at every wake
// before them was most of the client's CPU (BENCHMARKS.md, "Performance,
// round 3"). The extender keeps two, under its mu: the expiry of every
// live holding and the autoextension schedule.
type timeQueue struct {
	key func(h *holding) time.Duration
	pos func(h *holding) *int32 // 1 + its index in its bucket; 0: not queued
	// in is the holding's bucket while it is queued. A remove looked the
	// bucket up by the holding's time before: at a million held locks
	// every extension moves a holding out of a bucket of its own time,
	// and the map's lookup, a cache miss, was a twentieth of the client's
	// CPU. A bucket that holds a holding is never dropped.
	in func(h *holding) **[]*holding
	// buckets has a bucket for each number in order, once: an emptied
	// bucket stays until it is first, so that holdings coming and going
	// in one bucket (short holdings, as in W2) neither insert nor delete
	// in the map, and order holds no number twice.
	buckets map[int64]*[]*holding
	order   []int64 // the buckets' numbers, a min-heap
	// free keeps dropped buckets for reuse, so that a lock taken and
	// released alone, whose holding has a bucket of its own in each
	// queue, allocates none.
	free []*[]*holding
	// lastSlot and last are the bucket looked up last: the holdings of
	// one extension batch leave one bucket and enter another together,
	// so most lookups are of the bucket before, without the map.
	lastSlot int64
	last     *[]*holding
}

// maxFreeBuckets bounds the dropped buckets kept for reuse. The expiry
// queue drops its buckets in bulk: an extension moves a holding's expiry
// 3/4 of a TTL on, which empties the earliest buckets, and they are
// dropped together when the expiry timer next looks (at a million locks
// of a 30 s TTL, about 900 buckets of 350 holdings at once). Kept, they
// make the buckets that the moved holdings fill; 64 of them were not
// enough, and the new buckets were most of what a hold allocated.
const maxFreeBuckets = 1024

func newTimeQueue(key func(*holding) time.Duration, pos func(*holding) *int32, in func(*holding) **[]*holding) timeQueue {
	return timeQueue{key: key, pos: pos, in: in, buckets: map[int64]*[]*holding{}}
}

// queued reports whether h is in the queue.
func (q *timeQueue) queued(h *holding) bool { return *q.pos(h) != 0 }

// bucket returns bucket s, nil when there is none.
func (q *timeQueue) bucket(s int64) *[]*holding {
	if q.last != nil && q.lastSlot == s {
		return q.last
	}
	b := q.buckets[s]
	if b != nil {
		q.lastSlot, q.last = s, b
	}
	return b
}

// put adds h, which must not be queued, by its time.
func (q *timeQueue) put(h *holding) {
	s := int64(q.key(h) / queueSlot)
	b := q.bucket(s)
	if b == nil {
		if n := len(q.free); n > 0 {
			b = q.free[n-1]
			q.free = q.free[:n-1]
		} else {
			b = new([]*holding)
		}
		q.buckets[s] = b
		q.push(s)
	}
	addPlaced(b, h, q.pos)
	*q.in(h) = b
}

// remove takes h out, if it is in the queue.
func (q *timeQueue) remove(h *holding) {
	if !q.queued(h) {
		return
	}
	in := q.in(h)
	removePlaced(*in, h, q.pos)
	*in = nil
}

// first returns the holdings of the earliest bucket that has any, nil
// when the queue is empty, dropping the empty buckets before it. The
// slice is the bucket's own: remove changes it.
func (q *timeQueue) first() *[]*holding {
	for len(q.order) > 0 {
		s := q.order[0]
		b := q.buckets[s]
		if len(*b) > 0 {
			return b
		}
		delete(q.buckets, s)
		if q.last == b {
			q.last = nil
		}
		if len(q.free) < maxFreeBuckets {
			q.free = append(q.free, b)
		}
		q.pop()
	}
	return nil
}

// popDue takes out and appends to dst, bucket by bucket from the earliest,
// the holdings that due says are due, up to the first bucket that keeps one
// that is not; kept, when not nil, is called for each holding kept there.
// The holdings after that bucket are later ones, which the callers leave
// for a later look.
func (q *timeQueue) popDue(dst []*holding, due func(h *holding) bool, kept func(h *holding)) []*holding {
	out := dst
	for b := q.first(); b != nil; b = q.first() {
		left := false
		for i := 0; i < len(*b); {
			h := (*b)[i]
			if due(h) {
				q.remove(h) // the bucket's last holding takes its place
				out = append(out, h)
				continue
			}
			left = true
			if kept != nil {
				kept(h)
			}
			i++
		}
		if left {
			break
		}
	}
	return out
}

// earliest is the earliest time in bucket b, which is not empty.
func (q *timeQueue) earliest(b *[]*holding) time.Duration {
	t := q.key((*b)[0])
	for _, h := range (*b)[1:] {
		t = min(t, q.key(h))
	}
	return t
}

func (q *timeQueue) push(s int64) {
	q.order = append(q.order, s)
	for i := len(q.order) - 1; i > 0; {
		parent := (i - 1) / 2
		if q.order[parent] <= q.order[i] {
			break
		}
		q.order[parent], q.order[i] = q.order[i], q.order[parent]
		i = parent
	}
}

func (q *timeQueue) pop() {
	last := len(q.order) - 1
	q.order[0] = q.order[last]
	q.order = q.order[:last]
	for i := 0; ; {
		least := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(q.order) && q.order[c] < q.order[least] {
				least = c
			}
		}
		if least == i {
			return
		}
		q.order[i], q.order[least] = q.order[least], q.order[i]
		i = least
	}
}
