package failover

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
)

// subject is one implementation run through a sensitivity trigger.
type subject struct {
	name    string
	lockers func(string) locker
	broken  bool // the checks must flag it
}

// 10. Checker sensitivity: every deliberately broken variant of the
// reference client is run under a workload that exposes its bug, and the
// checks must flag it; the library and the correct reference client run
// under the same workload and must not be flagged.
func (s *suite) checkerSensitivity(t *testing.T) {
	pools := s.c.Pools()
	t.Run("quorum_N/2", func(t *testing.T) {
		// Two holders can each have 2 of 5 nodes.
		const ttl = 10 * time.Second
		ok := refConfig{ttl: ttl, nodeTimeout: 200 * time.Millisecond, driftFactor: 0.01, quorum: 3}
		bad := ok
		bad.quorum = nodes / 2
		s.sensitivity(t, "quorum N/2", []subject{
			{"library", libLockers(factory(t, pools, redlock.WithTTL(ttl))), false},
			{"reference", refLockers(&ok, pools), false},
			{"quorum N/2", refLockers(&bad, pools), true},
		}, func(t *testing.T, lockers func(string) locker, lock string, broken bool) *history {
			h := newHistory()
			runSensitive(workload{clients: 12, names: []string{lock}, newLocker: lockers,
				retryDelay: 20 * time.Millisecond, hold: holdUniform(2 * time.Millisecond), witness: true},
				h, s.dur(2*time.Second, 1500*time.Millisecond), broken)
			return h
		})
	})
	t.Run("plain_DEL", func(t *testing.T) {
		// A holder that overran its validity deletes its successor's key.
		const ttl, nodeTimeout = 300 * time.Millisecond, 100 * time.Millisecond
		ok := refConfig{ttl: ttl, nodeTimeout: nodeTimeout, driftFactor: 0.01, quorum: 3}
		bad := ok
		bad.plainDEL = true
		overrun := func(r *rand.Rand) time.Duration {
			if r.IntN(4) == 0 {
				return ttl + 50*time.Millisecond
			}
			return time.Millisecond
		}
		s.sensitivity(t, "release with plain DEL", []subject{
			{"library", libLockers(factory(t, pools, redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))), false},
			{"reference", refLockers(&ok, pools), false},
			{"plain DEL", refLockers(&bad, pools), true},
		}, func(t *testing.T, lockers func(string) locker, lock string, broken bool) *history {
			h := newHistory()
			runSensitive(workload{clients: 8, names: []string{lock}, newLocker: lockers,
				retryDelay: 2 * time.Millisecond, hold: overrun, witness: true},
				h, s.dur(2500*time.Millisecond, 1500*time.Millisecond), broken)
			return h
		})
	})
	t.Run("no_drift", func(t *testing.T) {
		// Every node's clock runs 5% fast: keys expire 5% early. The drift
		// allowance (5% + 2 ms here) covers exactly that; without it a
		// holder outlives its keys.
		const ttl, factor, nodeTimeout = 500 * time.Millisecond, 0.05, 100 * time.Millisecond
		fast := fastClock(pools, func(ms int64) int64 { return ms - int64(float64(ms)*factor) })
		// The fault is real: a key set through these pools lives 5% less.
		lib := libLockers(factory(t, fast, redlock.WithTTL(ttl), redlock.WithDriftFactor(factor), redlock.WithNodeTimeout(nodeTimeout)))
		probe := lib("s10:probe")
		if _, err := probe.acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
		if ms, err := redis.Int64(s.do(0, "PTTL", "s10:probe")); err != nil || ms > 475 {
			t.Fatalf("PTTL through a fast-clock pool = %d, %v; want at most 475", ms, err)
		}
		_ = probe.release(context.Background())
		ok := refConfig{ttl: ttl, nodeTimeout: nodeTimeout, driftFactor: factor, quorum: 3}
		bad := ok
		bad.noDrift = true
		s.sensitivity(t, "no drift subtraction", []subject{
			{"library", lib, false},
			{"reference", refLockers(&ok, fast), false},
			{"no drift", refLockers(&bad, fast), true},
		}, func(t *testing.T, lockers func(string) locker, lock string, broken bool) *history {
			h := newHistory()
			runSensitive(workload{clients: 8, names: []string{lock}, newLocker: lockers,
				retryDelay: time.Millisecond, expire: true, witness: true},
				h, s.dur(3*time.Second, 2*time.Second), broken)
			return h
		})
	})
	t.Run("no_elapsed", func(t *testing.T) {
		// An acquire slowed by a quorum of slow nodes, followed by a fast one.
		const ttl, nodeTimeout = 500 * time.Millisecond, 300 * time.Millisecond
		ok := refConfig{ttl: ttl, nodeTimeout: nodeTimeout, driftFactor: 0.01, quorum: 3}
		bad := ok
		bad.noElapsed = true
		s.sensitivity(t, "no elapsed subtraction", []subject{
			{"library", libLockers(factory(t, pools, redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))), false},
			{"reference", refLockers(&ok, pools), false},
			{"no elapsed", refLockers(&bad, pools), true},
		}, func(t *testing.T, lockers func(string) locker, lock string, broken bool) *history {
			return s.slowThenFast(t, lockers, lock, s.pick(4, 3))
		})
	})
}

// sensitivity runs trigger for every subject and checks the verdicts.
func (s *suite) sensitivity(t *testing.T, variant string, subjects []subject,
	trigger func(t *testing.T, lockers func(string) locker, lock string, broken bool) *history) {
	t.Helper()
	for _, sub := range subjects {
		start := time.Now()
		lock := fmt.Sprintf("s10:%s:%s", variant, sub.name)
		h := trigger(t, sub.lockers, lock, sub.broken)
		r := h.figures(fmt.Sprintf("10 sensitivity: %s, %s", variant, sub.name), 0)
		r.Backend, r.Wall = string(s.c.Backend()), time.Since(start)
		flagged := r.Overlaps > 0 || r.LostUpdates > 0
		if sub.broken {
			r.Note = fmt.Sprintf("broken variant, flagged=%v", flagged)
		} else {
			r.Note = fmt.Sprintf("control, flagged=%v", flagged)
		}
		r.log(t)
		switch {
		case sub.broken && !flagged:
			t.Errorf("%s: the checks did not flag the broken variant (%d successes)", variant, r.Successes)
		case !sub.broken && flagged:
			for i, o := range h.overlaps() {
				if i < 5 {
					t.Errorf("%s, %s: overlap: %v", variant, sub.name, o)
				}
			}
			t.Errorf("%s, %s: flagged (%d overlaps, %d lost updates)", variant, sub.name, r.Overlaps, r.LostUpdates)
		case sub.broken && r.Successes == 0:
			t.Errorf("%s: no acquisitions", variant)
		}
	}
}

// runSensitive runs a workload for d. A broken subject runs until the
// checks flag it, for at most 3d, so that a slow machine only makes it
// slower; a correct one runs exactly d.
func runSensitive(w workload, h *history, d time.Duration, broken bool) {
	if !broken {
		run(w, h, d)
		return
	}
	stop, _ := w.start(h)
	defer stop()
	deadline := time.Now().Add(3 * d)
	for time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if len(h.overlaps()) > 0 || h.lostUpdates() > 0 {
			return
		}
	}
}

// slowThenFast runs rounds in which A acquires while a quorum of nodes
// answers 150 ms late, then the nodes are fast again and B polls for the
// lock. A holds to the end of the validity it was told.
func (s *suite) slowThenFast(t *testing.T, lockers func(string) locker, lock string, rounds int) *history {
	const lag = 150 * time.Millisecond
	h := newHistory()
	ctx := context.Background()
	for round := range rounds {
		for i := range 3 {
			s.c.Delay(i, lag)
		}
		a := lockers(lock)
		t0 := now()
		va, err := a.acquire(ctx)
		t1 := now()
		h.attempt(t0, t1, err)
		for i := range 3 {
			s.c.Delay(i, 0)
		}
		if err != nil {
			t.Logf("round %d: A's slow acquire failed: %v", round+1, err)
			time.Sleep(time.Second)
			continue
		}
		h.hold(lock, a.id(), t1, t1+va)
		for now() < t1+va+300*time.Millisecond {
			b := lockers(lock)
			u0 := now()
			vb, err := b.acquire(ctx)
			u1 := now()
			h.attempt(u0, u1, err)
			if err == nil {
				h.hold(lock, b.id(), u1, min(u1+vb, now()))
				_ = b.release(ctx)
				break
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(max(0, t1+va-now())) // A's validity is over
	}
	return h
}
