package redlock

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestTimeQueue: under random putting, moving and removing, every queued
// holding sits in the bucket of its time at the place it knows, no other
// holding is queued, first returns the earliest bucket and earliest its
// earliest time; popDue takes what is due up to a cutoff; drained through
// first and remove, the holdings come out in order of their buckets.
func TestTimeQueue(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	q := newTimeQueue(func(h *holding) time.Duration { return h.at }, func(h *holding) *int32 { return &h.qpos }, func(h *holding) **[]*holding { return &h.qIn })
	hs := make([]*holding, 500)
	for i := range hs {
		hs[i] = &holding{}
	}
	queued := map[*holding]bool{}
	for step := 0; step < 20000; step++ {
		h := hs[rng.IntN(len(hs))]
		q.remove(h) // its time may change only out of the queue
		delete(queued, h)
		if rng.IntN(3) != 0 {
			h.at = time.Duration(rng.Int64N(int64(2 * time.Second)))
			q.put(h)
			queued[h] = true
		}
		if step%97 == 0 {
			checkQueue(t, &q, queued)
		}
	}
	checkQueue(t, &q, queued)
	// popDue takes every holding due by the cutoff from the buckets
	// before the cutoff's, stops in that bucket, and takes nothing later.
	cutoff := time.Second + queueSlot/2
	var kept int
	for _, h := range q.popDue(nil, func(h *holding) bool { return h.at <= cutoff }, func(*holding) { kept++ }) {
		if h.at > cutoff || q.queued(h) {
			t.Fatalf("popDue took a holding at %v (queued %v), cutoff %v", h.at, q.queued(h), cutoff)
		}
		delete(queued, h)
	}
	for h := range queued {
		if h.at < cutoff/queueSlot*queueSlot {
			t.Fatalf("popDue left a holding at %v, before the cutoff's bucket", h.at)
		}
	}
	if kept == 0 {
		t.Fatal("popDue kept no holding of the cutoff's bucket")
	}
	checkQueue(t, &q, queued)
	last := int64(-1)
	for b := q.first(); b != nil; b = q.first() {
		h := (*b)[0]
		if s := int64(h.at / queueSlot); s < last {
			t.Fatalf("bucket %d after bucket %d", s, last)
		} else {
			last = s
		}
		q.remove(h)
		delete(queued, h)
	}
	if len(queued) != 0 || len(q.buckets) != 0 {
		t.Fatalf("drained queue keeps %d holdings, %d buckets", len(queued), len(q.buckets))
	}
}

func checkQueue(t *testing.T, q *timeQueue, queued map[*holding]bool) {
	t.Helper()
	n, first, soonest := 0, int64(-1), time.Duration(-1)
	for s, b := range q.buckets {
		if len(*b) > 0 && (first < 0 || s < first) {
			first = s
		}
		for i, h := range *b {
			n++
			if !queued[h] || int(h.qpos) != i+1 || int64(h.at/queueSlot) != s {
				t.Fatalf("holding at %v in bucket %d place %d: queued %v, knows place %d", h.at, s, i+1, queued[h], h.qpos)
			}
			if soonest < 0 || h.at < soonest {
				soonest = h.at
			}
		}
	}
	if n != len(queued) {
		t.Fatalf("%d holdings in buckets, %d queued", n, len(queued))
	}
	if len(q.order) != len(q.buckets) {
		t.Fatalf("%d bucket numbers ordered for %d buckets", len(q.order), len(q.buckets))
	}
	for h := range queued {
		if !q.queued(h) {
			t.Fatalf("queued holding at %v does not know its place", h.at)
		}
	}
	b := q.first()
	if (b == nil) != (first < 0) {
		t.Fatalf("first %v, earliest bucket %d", b, first)
	}
	if b != nil && (int64(q.key((*b)[0])/queueSlot) != first || q.earliest(b) != soonest) {
		t.Fatalf("first is not the earliest bucket %d, or its earliest time %v is not %v", first, q.earliest(b), soonest)
	}
}
