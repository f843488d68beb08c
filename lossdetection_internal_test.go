package redlock

import (
	"context"
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/gomodule/redigo/redis"
)

// TestRedirectToAStranger points a connection's tracking at a client that
// is not the factory's subscriber, as a stale id does after a server
// restart: checkRedirect refuses it and turns tracking off again, while a
// redirect to the factory's named subscriber is kept.
func TestRedirectToAStranger(t *testing.T) {
	c, pools := poolsOf(t, 3)
	f, err := NewFactory(pools)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := f.det
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dial := func() redis.Conn {
		conn, err := redis.Dial("tcp", c.Nodes[0].Addr(), redis.DialReadTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	// Two pub/sub clients: a stranger, and one named as the subscriber.
	stranger, ours := dial(), dial()
	if _, err := ours.Do("CLIENT", "SETNAME", d.name); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 2)
	for i, sub := range []redis.Conn{stranger, ours} {
		if ids[i], err = redis.Int64(sub.Do("CLIENT", "ID")); err != nil {
			t.Fatal(err)
		}
		if _, err := sub.Do("SUBSCRIBE", "elsewhere"); err != nil {
			t.Fatal(err)
		}
	}
	cmd := dial()
	for i, want := range []error{errMisdirected, nil} {
		_ = cmd.Send("CLIENT", "TRACKING", "on", "REDIRECT", ids[i], "NOLOOP")
		_ = cmd.Send("CLIENT", "LIST", "ID", ids[i])
		replies, err := redis.Values(redis.DoContext(cmd, ctx, ""))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.checkRedirect(ctx, cmd, replies[0], replies[1]); !errors.Is(err, want) {
			t.Fatalf("redirect %d: checkRedirect = %v, want %v", i, err, want)
		}
		info, err := redis.Values(cmd.Do("CLIENT", "TRACKINGINFO"))
		if err != nil {
			t.Fatal(err)
		}
		flags, _ := redis.Strings(info[1], nil)
		if on := len(flags) > 0 && flags[0] == "on"; on != (want == nil) {
			t.Fatalf("redirect %d: tracking flags %v after checkRedirect", i, flags)
		}
	}
}

// TestArmingQueueReusesItsArray feeds the detector's arming queue as W2
// does, a steady stream of acquisitions each due trackDelay later: every
// watched arming due is queued for its check and no other, the rest stay
// in order, and the queue runs in its own array with no
// allocation once it has grown to the stream's size (a queue that only
// resliced its head reallocated it all the time).
func TestArmingQueueReusesItsArray(t *testing.T) {
	d := &lossDetector{watched: map[string]*holding{}, pending: map[string]struct{}{}}
	const perStep, step = 7, time.Millisecond
	names := []string{"a", "b", "c", "d", "e", "f", "g"}
	hs := make([]holding, perStep)
	for i := 0; i < perStep; i += 2 { // only some are still held when due
		d.watched[names[i]] = &hs[i]
	}
	var now time.Duration
	tick := func() {
		now += step
		for i := range perStep {
			d.arming = append(d.arming, arming{name: names[i], h: &hs[i], due: now + trackDelay})
		}
		d.armDue(now)
	}
	for range 100 { // grow to the stream's size
		tick()
		for name := range d.pending {
			if d.watched[name] == nil {
				t.Fatalf("unwatched %s queued for a check", name)
			}
		}
		clear(d.pending)
	}
	for k, a := range d.arming {
		if a.due <= now || k > 0 && a.due < d.arming[k-1].due {
			t.Fatalf("arming %d due at %v is out of order or overdue at %v", k, a.due, now)
		}
	}
	if want := int(trackDelay/step) * perStep; len(d.arming) != want {
		t.Fatalf("%d armings waiting, want %d", len(d.arming), want)
	}
	// AllocsPerRun rounds down to whole allocations per run, which a queue
	// that reallocates every few steps stays under: the array itself must
	// stay the same.
	array := unsafe.SliceData(d.arming)
	if allocs := testing.AllocsPerRun(1000, func() {
		tick()
		if got := unsafe.SliceData(d.arming); got != array {
			t.Fatalf("the arming queue moved to another array")
		}
	}); allocs != 0 {
		t.Fatalf("%.2f allocations per step of the arming queue, want 0", allocs)
	}
	if len(d.pending) != (perStep+1)/2 {
		t.Fatalf("pending %v, want the %d watched names", d.pending, (perStep+1)/2)
	}
}
